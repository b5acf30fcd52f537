// Validates GitHub Actions workflow files (Forgejo Actions reads the same syntax) with
// @action-validator/core: SchemaStore's github-workflow JSON schema plus the validator's own
// checks, compiled to WebAssembly. Usage: node validate_workflow.cjs MODULE_DIR FILE...
// Prints one JSON line per file: {"file", "errors": [...]} and exits 1 when any file has errors.
"use strict";
const fs = require("fs");
const path = require("path");
const {validateWorkflow} = require(path.resolve(process.argv[2]));
let failed = false;
for (const file of process.argv.slice(3)) {
  const state = validateWorkflow(fs.readFileSync(file, "utf8"));
  failed = failed || state.errors.length > 0;
  console.log(JSON.stringify({file, errors: state.errors}));
}
process.exit(failed ? 1 : 0);
