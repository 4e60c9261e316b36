// Builds the dashboard's front end into scheduler_core/dashboard/static (served by the function app).
//
//   node dashboard/build.mjs [--outdir DIR] [--no-typecheck]
//
// Type-checks the sources (tsc --noEmit, strict), bundles src/main.ts into app.js (ES module, minified,
// Chart.js included: nothing is loaded from a CDN) and src/style.css into app.css, and copies index.html
// and icon.svg. The output is deterministic: tests/browser/test_assets.py builds into a temporary folder
// and checks that the committed files are byte for byte what the sources give.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..");
const args = process.argv.slice(2);
const outIndex = args.indexOf("--outdir");
const outdir = outIndex >= 0 ? resolve(args[outIndex + 1]) : join(root, "scheduler_core", "dashboard", "static");
const COPIED = ["index.html", "icon.svg"];
const BUILT = ["app.js", "app.css"];

if (!args.includes("--no-typecheck")) {
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  execFileSync(process.execPath, [tsc, "-p", join(here, "tsconfig.json")], { stdio: "inherit" });
}

mkdirSync(outdir, { recursive: true });
for (const name of readdirSync(outdir)) {
  if (![...COPIED, ...BUILT].includes(name)) rmSync(join(outdir, name), { recursive: true });
}
const common = { bundle: true, minify: true, legalComments: "eof", logLevel: "warning", charset: "utf8" };
await build({
  ...common,
  entryPoints: [join(here, "src", "main.ts")],
  outfile: join(outdir, "app.js"),
  format: "esm",
  target: "es2022",
  platform: "browser",
});
await build({ ...common, entryPoints: [join(here, "src", "style.css")], outfile: join(outdir, "app.css") });
for (const name of COPIED) copyFileSync(join(here, "src", name), join(outdir, name));
console.log(`dashboard built into ${outdir}: ${[...BUILT, ...COPIED].join(", ")}`);
