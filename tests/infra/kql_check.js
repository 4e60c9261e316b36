// Parse and analyze KQL queries with Microsoft's Kusto.Language (npm @kusto/language-service-next, the
// engine's own parser and binder compiled to JavaScript), against table schemas given as Kusto schema text.
//
// Usage: node kql_check.js MODULES_DIR < {"tables": {"customMetrics": "(timestamp:datetime, ...)"},
//                                         "queries": {"id": "customMetrics | ..."}}
// Prints {"id": {"diagnostics": ["Error: ...", ...], "columns": [["name", "type"], ...]}}.
"use strict";

const path = require("path");
const modules = process.argv[2];
require(path.join(modules, "@kusto", "language-service-next", "bridge.js"));
require(path.join(modules, "@kusto", "language-service-next", "Kusto.Language.Bridge.js"));

const K = Kusto.Language;
const S = K.Symbols;

const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const tables = Object.entries(input.tables).map(([name, schema]) => new S.TableSymbol.$ctor7(name, schema, null));
const globals = K.GlobalState.Default.WithDatabase(new S.DatabaseSymbol.ctor("appinsights", tables));

const out = {};
for (const [id, query] of Object.entries(input.queries)) {
  const code = K.KustoCode.ParseAndAnalyze(query, globals);
  const list = code.GetDiagnostics();
  const diagnostics = [];
  for (let i = 0; i < list.Count; i++) {
    const d = list.getItem(i);
    diagnostics.push(`${d.Severity}: ${d.Message} (at ${d.Start})`);
  }
  const columns = [];
  const result = code.ResultType;
  if (result && result.Columns) {
    for (let i = 0; i < result.Columns.Count; i++) {
      const c = result.Columns.getItem(i);
      columns.push([c.Name, c.Type.Name]);
    }
  }
  out[id] = { diagnostics, columns };
}
process.stdout.write(JSON.stringify(out));
