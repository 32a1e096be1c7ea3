// Rolldown options for `jco componentize --bundle --bundle-config`: keep the
// host interfaces (`plimsoll:sandbox/...`, `wasi:...`) as component imports
// instead of trying to resolve them as files. jco already does this for
// `wasi:`; this adds plimsoll's own package.
export default {
  external: [/^plimsoll:/, /^wasi:/],
};
