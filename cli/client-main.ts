// The entry point of the standalone client command, bundled with esbuild into a package of its
// own (whose build adds the #! line): the commands that talk to a running server over HTTP.
// Nothing it imports may reach the server, the sandbox, native modules, tsx or files of this
// checkout through import.meta: test/cli-bundle.test.ts bundles it and runs the bundle from
// outside the repository.

import { usageError } from "./api.ts";
import { clientProgram } from "./program.ts";

const program = clientProgram().addHelpText(
  "after",
  "\n`serve` and `keys` (the server and its API keys) come with the server: run them from a gradebox checkout,\ne.g. `npx gradebox serve`, `npx gradebox keys create --project NAME`.",
);
// asked for here, they say where they are rather than "unknown command"
for (const name of ["serve", "keys"]) {
  program
    .command(name, { hidden: true })
    .allowUnknownOption()
    .allowExcessArguments()
    .action(() => usageError(`\`${name}\` comes with the server: run it from a gradebox checkout (npx gradebox ${name} …)`));
}
await program.parseAsync();
