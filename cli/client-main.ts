// The entry point of the standalone client command, bundled with esbuild into a package of its
// own (whose build adds the #! line): the commands that talk to a running server over HTTP, and
// `keys` over HTTP too (a project's admin manages its keys from anywhere). Nothing it imports may
// reach the server, the sandbox, native modules, tsx or files of this checkout through
// import.meta: test/cli-bundle.test.ts bundles it and runs the bundle from outside the repository.

import { usageError } from "./api.ts";
import { addKeyCommands } from "./keys.ts";
import { clientProgram } from "./program.ts";

const program = clientProgram().addHelpText(
  "after",
  "\n`serve` (the server) comes with the server: run it from a gradebox checkout, e.g. `npx gradebox serve`.\n" +
    "`keys` works over HTTP here, as the project's admin (an admin key) or the operator (GRADEBOX_ADMIN_TOKEN).",
);
addKeyCommands(program);
// asked for here, it says where it is rather than "unknown command"
program
  .command("serve", { hidden: true })
  .allowUnknownOption()
  .allowExcessArguments()
  .action(() => usageError("`serve` comes with the server: run it from a gradebox checkout (npx gradebox serve …)"));
await program.parseAsync();
