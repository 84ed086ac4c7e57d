// The web console: the SDK in the browser. This entry wires each panel's controls, then
// reconnects with the tab's saved API key. Modules: state (the client, the open grader), api
// (connecting), dom and feedback (helpers: elements, status line, errors where they happened),
// parse (pasted threads), and panels/, one per section of index.html. Panels call one another
// (the list opens a grader, opening one refreshes the list): those imports are cyclic, which
// ES modules allow as no module calls another while it loads.

import * as codeEditor from "./panels/code-editor.ts";
import * as connect from "./panels/connect.ts";
import * as detail from "./panels/detail.ts";
import * as editor from "./panels/editor.ts";
import * as endpointEditor from "./panels/endpoint-editor.ts";
import * as judgeEditor from "./panels/judge-editor.ts";
import * as models from "./panels/models.ts";
import * as test from "./panels/test.ts";
import * as versions from "./panels/versions.ts";

for (const panel of [connect, detail, versions, editor, judgeEditor, endpointEditor, codeEditor, test, models]) panel.wire();
connect.resume();
