// gradebox: the command line of this checkout (bin/gradebox.js runs it): the client commands of
// program.ts, which talk to a running server, plus `serve` and `keys`, which come with the server.

import { clientProgram } from "./program.ts";
import { addServerCommands } from "./server-commands.ts";

const program = clientProgram();
addServerCommands(program);
await program.parseAsync();
