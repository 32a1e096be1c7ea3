// attack: load QuickJS's std and os modules (files, processes, environment)
// why: the component is built without them; the module loader knows no 'std' or 'os'
// expect: ok
// must-contain: blocked
let out = [typeof std, typeof os, typeof scriptArgs];
try { await import('os'); out.push('LEAK'); } catch (e) { out.push('blocked'); }
out.join(' ')
