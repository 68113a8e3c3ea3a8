// Preloaded into a process under test (BUN_OPTIONS="--preload=…"): on exit it writes the file of
// every module it loaded to LOADED_MODULES_DIR/<pid>, so a test can tell what was (not) imported.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.env.LOADED_MODULES_DIR;
if (dir) process.on("exit", () => writeFileSync(join(dir, String(process.pid)), Object.keys(require.cache).join("\n")));
