// Prints GitLab's own .gitlab-ci.yml JSON schema (draft-07, "$id": https://gitlab.com/.gitlab-ci.yml,
// as gitlab-ci-local ships it in src/schema/schema.js) as JSON. Usage:
//   node dump_gitlab_schema.mjs PATH/TO/src/schema/schema.js > gitlab-ci.schema.json
import {pathToFileURL} from "node:url";
import {resolve} from "node:path";
const {schema} = await import(pathToFileURL(resolve(process.argv[2])).href);
process.stdout.write(JSON.stringify(schema));
