#!/usr/bin/env node
// The `gradebox` command (package bin). The CLI is TypeScript, run through tsx's loader.
import { register } from "tsx/esm/api";

register();
await import("../cli/main.ts");
