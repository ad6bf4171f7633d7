// Evaluates webhook matchConditions with a CEL implementation (@bufbuild/cel,
// conformant to the CEL specification) the way the API server binds them:
// `object` is the request's object, `oldObject` the stored one (null on
// CREATE), `request` the AdmissionRequest. JSON objects become CEL maps, whole
// numbers CEL ints, as the API server's unstructured-to-CEL conversion makes
// them.
//
//   node cel.mjs INPUT.json
//
// INPUT.json: {"conditions": [{"id": "...", "expression": "..."}],
//              "requests": [{"id": "...", "request": {AdmissionRequest}}]}
// Prints {"<condition id>": {"<request id>": true | false | "error: ..."}}.
import fs from "node:fs";
import { isCelError, parse, run } from "@bufbuild/cel";

function toCel(value) {
  if (Array.isArray(value)) return value.map(toCel);
  if (value !== null && typeof value === "object") {
    return new Map(Object.entries(value).map(([k, v]) => [k, toCel(v)]));
  }
  if (typeof value === "number" && Number.isInteger(value)) return BigInt(value);
  return value;
}

const input = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = {};
for (const condition of input.conditions) {
  const results = (out[condition.id] = {});
  try {
    parse(condition.expression);
  } catch (e) {
    for (const r of input.requests) results[r.id] = `error: does not compile: ${e.message}`;
    continue;
  }
  for (const r of input.requests) {
    const bindings = {
      object: toCel(r.request.object ?? null),
      oldObject: toCel(r.request.oldObject ?? null),
      request: toCel(r.request),
    };
    try {
      const value = run(condition.expression, bindings);
      if (isCelError(value)) {
        results[r.id] = `error: ${value.message}`;
      } else {
        results[r.id] = typeof value === "boolean" ? value : `error: not a bool: ${String(value)}`;
      }
    } catch (e) {
      results[r.id] = `error: ${e.message}`;
    }
  }
}
console.log(JSON.stringify(out));
