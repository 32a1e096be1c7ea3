//! Native tests of Node's built-in modules as programs use them (`fs`,
//! streams and `readline`, and the smaller ones `node/extras.js` makes).

use super::{ok, run_file, work, work_with_stdin};

#[test]
fn node_fs_writes_then_reads_and_resolves_against_cwd() {
    let _w = work(&[(
        "main.mjs",
        "import fs, { readFileSync, promises } from 'node:fs';\n\
         import fsp from 'fs/promises';\n\
         import path from 'path';\n\
         fs.mkdirSync('out/deep', { recursive: true });\n\
         fs.writeFileSync('out/deep/a.txt', 'h\\u00e9llo');\n\
         fs.appendFileSync('out/deep/a.txt', '!');\n\
         console.log(readFileSync('/work/out/deep/a.txt', 'utf8'), readFileSync('out/deep/a.txt').length);\n\
         process.chdir('out');\n\
         console.log(process.cwd(), fs.readdirSync('deep'), fs.existsSync('deep/a.txt'), fs.statSync('deep').isDirectory());\n\
         await promises.writeFile('b.json', JSON.stringify({ ok: true }));\n\
         console.log(JSON.parse(await fsp.readFile('/work/out/b.json', 'utf8')).ok, fs.readFileSync('b.json').toString());\n\
         fs.renameSync('b.json', 'c.json'); fs.rmSync('deep', { recursive: true });\n\
         console.log(fs.readdirSync('.', { withFileTypes: true }).map((d) => d.name + ':' + d.isFile()).join());\n\
         try { fs.readFileSync('missing.txt') } catch (e) { console.log(e.code, e.syscall, e.message) }\n\
         fs.readFile('c.json', 'utf8', (err, text) => console.log('callback', err, text.length));\n\
         console.log(Buffer.from('hi').toString('base64'), Buffer.from('aGk=', 'base64').toString(), path.relative('/work/a/b', '/work/c'));\n",
    )]);
    let ran = run_file("/work/main.mjs", &[]);
    ok(&ran);
    assert_eq!(
        ran.out,
        "h\u{e9}llo! 7\n\
         /work/out [\"a.txt\"] true true\n\
         true {\"ok\":true}\n\
         c.json:true\n\
         ENOENT open ENOENT: open 'missing.txt'\n\
         aGk= hi ../../c\n\
         callback null 11\n"
    );
}

#[test]
fn stdin_is_read_through_fs_and_process_stdin() {
    let _w = work_with_stdin(
        &[(
            "main.mjs",
            "import readline from 'node:readline';\n\
             const rl = readline.createInterface({ input: process.stdin });\n\
             const lines = [];\n\
             for await (const line of rl) lines.push(line.toUpperCase());\n\
             console.log(lines.join('|'));\n",
        )],
        "a\nb\nc\n",
    );
    let ran = run_file("/work/main.mjs", &[]);
    ok(&ran);
    assert_eq!(ran.out, "A|B|C\n");
}

#[test]
fn the_smaller_built_ins_load_on_first_use() {
    let _w = work(&[(
        "main.mjs",
        "import util from 'node:util';\n\
             import assert from 'node:assert';\n\
             import { strict } from 'assert';\n\
             import os from 'os';\n\
             import { StringDecoder } from 'string_decoder';\n\
             import qs from 'querystring';\n\
             import { EventEmitter, once } from 'events';\n\
             import fs from 'fs';\n\
             import readline from 'readline';\n\
             console.log(util.format('%s=%d %j %%', 'a', 42, { b: 1 }), util.inspect('x'), os.EOL === '\\n', os.platform());\n\
             assert.deepStrictEqual({ a: [1, new Map([[1, 2]])] }, { a: [1, new Map([[1, 2]])] });\n\
             try { strict.equal(1, '1'); } catch (e) { console.log(e.code, e.name, e.message.split('\\n')[0]); }\n\
             assert.throws(() => { throw new TypeError('t'); }, TypeError);\n\
             await assert.rejects(Promise.reject(new Error('r')), /r/);\n\
             const sleep = util.promisify((ms, cb) => setTimeout(() => cb(null, ms), ms));\n\
             console.log(await sleep(2), util.isDeepStrictEqual([1], [1]), util.types.isPromise(sleep(0)));\n\
             const d = new StringDecoder('utf8');\n\
             console.log(d.write(Buffer.from([0xe2, 0x82])) + '|' + d.end(Buffer.from([0xac])), qs.stringify({ a: [1, 2], b: 'x y' }), qs.parse('a=1&a=2&b=x+y').b);\n\
             const e = new EventEmitter(); setTimeout(() => e.emit('go', 7), 1); console.log((await once(e, 'go'))[0]);\n\
             const w = fs.createWriteStream('lines.txt'); w.write('one\\n'); w.end('two\\n'); await once(w, 'finish');\n\
             const lines = []; for await (const l of readline.createInterface({ input: fs.createReadStream('lines.txt') })) lines.push(l);\n\
             console.log(lines, Buffer.from('hi'), [Buffer.from('a').toString()]);\n\
             console.count(); console.count(); console.time('t'); console.timeEnd('nope');\n",
    )]);
    let ran = run_file("/work/main.mjs", &[]);
    ok(&ran);
    assert_eq!(
        ran.out,
        "a=42 {\"b\":1} % 'x' true linux\n\
         ERR_ASSERTION AssertionError Expected values to be strictly equal:\n\
         2 true true\n\
         |\u{20ac} a=1&a=2&b=x%20y x y\n\
         7\n\
         [\"one\",\"two\"] <Buffer 68 69> [\"a\"]\n\
         default: 1\n\
         default: 2\n"
    );
}
