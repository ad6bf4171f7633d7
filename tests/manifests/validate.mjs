// Validates rendered Kubernetes objects against the API's own OpenAPI schemas,
// as kubernetes-models (core: a current Kubernetes, 1.35 or newer, whose PodSpec
// already has schedulingGroup) and @kubernetes-models/cert-manager
// and /prometheus-operator (their CRDs) carry them:
//
//   1. the model's validate(): the JSON Schema compiled from the OpenAPI
//      definition (required fields, types, enums, formats, patterns);
//   2. unknown fields, which those schemas let through: every object is
//      written as a TypeScript literal typed with the model's interface, which
//      is generated from the same definition, and the TypeScript compiler's
//      excess-property check rejects any field the schema does not name, at
//      every depth.
//
//   node validate.mjs OBJECTS.json
//
// OBJECTS.json is an array of {"source": "overlay name", "object": {...}}.
// Prints one line per problem ("<source>: <Kind>/<name>: <what>") and exits 1
// if there was any, 0 otherwise, after a summary line.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const here = path.dirname(fileURLToPath(import.meta.url));

// apiVersion -> the module holding its models.
function modelModule(apiVersion) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "") return `kubernetes-models/${version}`;
  if (group === "cert-manager.io" || group.endsWith(".cert-manager.io")) {
    return `@kubernetes-models/cert-manager/${group}/${version}`;
  }
  if (group === "monitoring.coreos.com") {
    return `@kubernetes-models/prometheus-operator/${group}/${version}`;
  }
  return `kubernetes-models/${group}/${version}`;
}

function describe(entry) {
  const o = entry.object;
  return `${entry.source}: ${o.kind}/${o.metadata?.name ?? "(no name)"}`;
}

const entries = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const problems = [];

// 1. The compiled schemas.
for (const entry of entries) {
  const { apiVersion, kind } = entry.object;
  let models;
  try {
    models = await import(modelModule(apiVersion));
  } catch (e) {
    problems.push(`${describe(entry)}: no schema for ${apiVersion}: ${e.message}`);
    continue;
  }
  const Model = models[kind];
  if (typeof Model !== "function") {
    problems.push(`${describe(entry)}: no schema for kind ${kind} in ${apiVersion}`);
    continue;
  }
  try {
    new Model(entry.object).validate();
  } catch (e) {
    problems.push(`${describe(entry)}: ${e.message}`);
  }
}

// 2. Unknown fields, through the TypeScript compiler. The file sits in a
// temporary folder whose node_modules is this folder's.
const work = fs.mkdtempSync(path.join(os.tmpdir(), "cudagate-manifests-"));
try {
  fs.symlinkSync(path.join(here, "node_modules"), path.join(work, "node_modules"));
  const lines = [];
  const lineOf = [];
  entries.forEach((entry, i) => {
    const { apiVersion, kind } = entry.object;
    lines.push(`import type { I${kind} as T${i} } from "${modelModule(apiVersion)}/${kind}";`);
  });
  entries.forEach((entry, i) => {
    const text = `export const o${i}: T${i} = ${JSON.stringify(entry.object, null, 1)};`;
    const first = lines.length;
    lines.push(...text.split("\n"));
    for (let l = first; l < lines.length; l++) lineOf[l] = entry;
  });
  const file = path.join(work, "objects.ts");
  fs.writeFileSync(file, lines.join("\n") + "\n");
  const program = ts.createProgram([file], {
    noEmit: true,
    strict: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  });
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(d.messageText, " ");
    if (d.file && d.file.fileName === file && d.start !== undefined) {
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      const entry = lineOf[line];
      const where = entry ? describe(entry) : `objects.ts:${line + 1}`;
      problems.push(`${where}: ${message} (line ${line + 1}: ${lines[line].trim()})`);
    } else {
      problems.push(`typescript: ${message}`);
    }
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}

for (const p of problems) console.log(p);
console.log(`${entries.length} objects validated, ${problems.length} problems`);
process.exit(problems.length === 0 ? 0 : 1);
