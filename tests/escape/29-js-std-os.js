// attack: load QuickJS's std and os modules (files, processes, environment), or Node's child_process and net
// why: the component is built without QuickJS's modules; the loader knows no 'std', 'qjs:' or process/network built-ins, and Node's 'os' and 'fs' describe only the sandbox
// expect: ok
// must-contain: blocked blocked blocked blocked
let out = [typeof std, typeof scriptArgs];
for (const m of ['std', 'qjs:os', 'child_process', 'net']) {
    try { await import(m); out.push('LEAK ' + m); } catch (e) { out.push('blocked'); }
}
out.join(' ')
