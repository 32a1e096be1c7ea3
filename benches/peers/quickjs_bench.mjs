// quickjs-emscripten on Node: `1+1` per run, three ways.
//
//   node quickjs_bench.mjs once                one fresh module, eval, exit (timed by proc_bench.py)
//   node quickjs_bench.mjs bench N_MODULE N_CTX  in-process figures, one JSON line each:
//     quickjs-emscripten/fresh-module     newQuickJSWASMModule(RELEASE_SYNC) + runtime + context per run
//     quickjs-emscripten/fresh-runtime    a new runtime + context per run in one shared module
//     quickjs-emscripten/fresh-context    a new context per run in one shared runtime
import { newQuickJSWASMModule, RELEASE_SYNC } from "quickjs-emscripten";
import { summary } from "./stats.mjs";

function evalOnePlusOne(ctx) {
  const handle = ctx.unwrapResult(ctx.evalCode("1+1"));
  const value = ctx.getNumber(handle);
  handle.dispose();
  if (value !== 2) throw new Error(`1+1 gave ${value}`);
  return value;
}

const [mode, ...args] = process.argv.slice(2);

if (mode === "once") {
  const mod = await newQuickJSWASMModule(RELEASE_SYNC);
  const ctx = mod.newContext();
  console.log(evalOnePlusOne(ctx));
  ctx.dispose();
} else if (mode === "bench") {
  const nModule = Number(args[0] ?? 50);
  const nCtx = Number(args[1] ?? 1000);

  // (a) a fresh module (fresh wasm instance and memory) per run.
  await newQuickJSWASMModule(RELEASE_SYNC); // warm-up: file cache, JIT of the glue
  let samples = [];
  for (let i = 0; i < nModule; i++) {
    const t0 = performance.now();
    const mod = await newQuickJSWASMModule(RELEASE_SYNC);
    const rt = mod.newRuntime();
    const ctx = rt.newContext();
    evalOnePlusOne(ctx);
    ctx.dispose();
    rt.dispose();
    samples.push(performance.now() - t0);
  }
  console.log(JSON.stringify(summary("quickjs-emscripten/fresh-module", samples, { kind: "in-process" })));

  // (b) a fresh runtime (own heap and GC, same wasm memory) per run.
  const shared = await newQuickJSWASMModule(RELEASE_SYNC);
  samples = [];
  for (let i = 0; i < nCtx + 10; i++) {
    const t0 = performance.now();
    const rt = shared.newRuntime();
    const ctx = rt.newContext();
    evalOnePlusOne(ctx);
    ctx.dispose();
    rt.dispose();
    if (i >= 10) samples.push(performance.now() - t0);
  }
  console.log(JSON.stringify(summary("quickjs-emscripten/fresh-runtime", samples, { kind: "in-process" })));

  // (c) a fresh context (own globals; shared heap, GC and atoms) per run.
  const rt = shared.newRuntime();
  samples = [];
  for (let i = 0; i < nCtx + 10; i++) {
    const t0 = performance.now();
    const ctx = rt.newContext();
    evalOnePlusOne(ctx);
    ctx.dispose();
    if (i >= 10) samples.push(performance.now() - t0);
  }
  rt.dispose();
  console.log(JSON.stringify(summary("quickjs-emscripten/fresh-context", samples, { kind: "in-process" })));
} else {
  console.error("usage: node quickjs_bench.mjs once | bench [N_MODULE] [N_CTX]");
  process.exit(2);
}
