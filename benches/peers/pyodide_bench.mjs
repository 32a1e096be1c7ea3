// Pyodide (CPython compiled to wasm by Emscripten) on Node: `1+1` per run.
//
//   node pyodide_bench.mjs once              one loadPyodide, eval, exit (timed by proc_bench.py)
//   node pyodide_bench.mjs bench N_LOAD N_GLOBALS   in-process figures, one JSON line each:
//     pyodide/fresh-load      a fresh loadPyodide() (new wasm instance, interpreter, stdlib) per run
//     pyodide/fresh-globals   a fresh globals dict per run in ONE shared interpreter: no isolation
//                             between runs (sys.modules, builtins, files, threads all shared)
import { loadPyodide } from "pyodide";
import { summary } from "./stats.mjs";

function evalOnePlusOne(py, globals) {
  const value = py.runPython("1+1", { globals });
  if (value !== 2) throw new Error(`1+1 gave ${value}`);
  return value;
}

const [mode, ...args] = process.argv.slice(2);

if (mode === "once") {
  const py = await loadPyodide();
  console.log(evalOnePlusOne(py, py.globals));
} else if (mode === "bench") {
  const nLoad = Number(args[0] ?? 5);
  const nGlobals = Number(args[1] ?? 1000);

  // (b) first, while the process is small: a fresh globals dict per run.
  const shared = await loadPyodide();
  const dict = shared.globals.get("dict");
  let samples = [];
  for (let i = 0; i < nGlobals + 10; i++) {
    const t0 = performance.now();
    const g = dict();
    evalOnePlusOne(shared, g);
    g.destroy();
    if (i >= 10) samples.push(performance.now() - t0);
  }
  dict.destroy();
  console.log(JSON.stringify(summary("pyodide/fresh-globals", samples, { kind: "in-process", isolation: "none between runs" })));

  // (a) a fresh interpreter per run (the one above already warmed the file cache).
  samples = [];
  for (let i = 0; i < nLoad; i++) {
    const t0 = performance.now();
    const py = await loadPyodide();
    evalOnePlusOne(py, py.globals);
    samples.push(performance.now() - t0);
  }
  console.log(JSON.stringify(summary("pyodide/fresh-load", samples, { kind: "in-process" })));
} else {
  console.error("usage: node pyodide_bench.mjs once | bench [N_LOAD] [N_GLOBALS]");
  process.exit(2);
}
