//! The module loader: how `import` (static and dynamic) finds and compiles
//! a module, and the natives `require` and `__plimsoll_main` compile code
//! with.
//!
//! Resolution and loading are decided in JavaScript (`node/modules.js`,
//! shared with `require`): QuickJS asks the [`NodeResolver`] for the key of
//! `import "x"` seen from module `base` (an absolute path inside `/work`,
//! or `node:NAME` for a built-in) and the [`NodeLoader`] for the module of
//! a key; both call the hooks `node/modules.js` returns, which the engine
//! stores in the context ([`install`]). The hooks give back the module's
//! source text and what goes into its `import.meta`; this file compiles it.
//! A built-in, a JSON file or a CommonJS file imported from a module is a
//! small generated module that re-exports a value handed over in its
//! `import.meta`.
//!
//! QuickJS's loader callbacks are set once on the runtime, when the engine
//! is created (and so survive pre-initialization); nothing is loaded until
//! a program or a cell imports something.

use rquickjs::context::EvalOptions;
use rquickjs::function::Opt;
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Ctx, Exception, Function, JsLifetime, Module, Object, Promise, Result, Value};

/// The hooks object of `node/modules.js` (and `node/main.js`), kept in the
/// context for the loader callbacks and the program's natives.
struct Hooks<'js>(Object<'js>);

// SAFETY: `Hooks` holds nothing but a value of the context it was stored
// in; `Changed` only renames that lifetime.
unsafe impl<'js> JsLifetime<'js> for Hooks<'js> {
    type Changed<'to> = Hooks<'to>;
}

/// Stores the hooks in the context.
pub fn install<'js>(ctx: &Ctx<'js>, hooks: Object<'js>) -> Result<()> {
    ctx.store_userdata(Hooks(hooks))
        .map(|_| ())
        .map_err(|_| Exception::throw_internal(ctx, "the module hooks could not be stored"))
}

/// The hooks object.
pub fn hooks<'js>(ctx: &Ctx<'js>) -> Result<Object<'js>> {
    let hooks = ctx.userdata::<Hooks>().map(|h| h.0.clone());
    hooks.ok_or_else(|| Exception::throw_internal(ctx, "the module hooks are missing"))
}

/// Calls `hooks[name](...args)`.
pub fn call_hook<'js, A, R>(ctx: &Ctx<'js>, name: &str, args: A) -> Result<R>
where
    A: rquickjs::function::IntoArgs<'js>,
    R: rquickjs::FromJs<'js>,
{
    hooks(ctx)?.get::<_, Function>(name)?.call(args)
}

/// QuickJS's module-name normalizer: `hooks.resolve(specifier, base)`.
pub struct NodeResolver;

impl Resolver for NodeResolver {
    fn resolve<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<String> {
        call_hook(ctx, "resolve", (name, base))
    }
}

/// QuickJS's module loader: compiles the module of a resolved key.
pub struct NodeLoader;

impl Loader for NodeLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<Module<'js, Declared>> {
        declare(ctx, name, None)
    }
}

/// Compiles the module `key`: `hooks.load(key, source)` gives
/// `{source, meta}` (reading the file unless `source` is given); `meta`'s
/// properties go into the module's `import.meta`.
fn declare<'js>(ctx: &Ctx<'js>, key: &str, source: Option<String>) -> Result<Module<'js>> {
    let loaded: Object = call_hook(ctx, "load", (key, source))?;
    let source: String = loaded.get("source")?;
    refuse_nul(ctx, key, &source)?;
    let module = Module::declare(ctx.clone(), key, source)?;
    if let Some(meta) = loaded.get::<_, Option<Object>>("meta")? {
        let target = module.meta()?;
        for name in meta.keys::<String>() {
            let name = name?;
            target.set(&name, meta.get::<_, Value>(&name)?)?;
        }
    }
    Ok(module)
}

/// QuickJS takes source text as a C string.
fn refuse_nul(ctx: &Ctx<'_>, name: &str, source: &str) -> Result<()> {
    match source.find('\0') {
        Some(at) => Err(Exception::throw_syntax(
            ctx,
            &format!("{name} contains a NUL character (at byte {at})"),
        )),
        None => Ok(()),
    }
}

/// `evaluateModule(key, source?)`: compiles, links and evaluates the module
/// `key` (from `source`, or from its file); returns the promise of its
/// evaluation (top-level `await` settles it later).
fn evaluate_module<'js>(ctx: Ctx<'js>, key: String, source: Opt<String>) -> Result<Promise<'js>> {
    let module = declare(&ctx, &key, source.0)?;
    let (_, promise) = module.eval()?;
    Ok(promise)
}

/// `compile(source, filename, asynchronous)`: evaluates `source` as a
/// sloppy-mode global script named `filename` and returns its completion
/// value; with `asynchronous`, top-level `await` is allowed and the value
/// is a promise of `{value}`. `require` compiles each CommonJS file as one
/// function expression this way; `node -e` runs its code this way.
fn compile<'js>(
    ctx: Ctx<'js>,
    source: String,
    filename: String,
    asynchronous: bool,
) -> Result<Value<'js>> {
    refuse_nul(&ctx, &filename, &source)?;
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.promise = asynchronous;
    options.filename = Some(filename);
    ctx.eval_with_options(source, options)
}

/// Adds the loader's natives to the prelude's `native` object.
pub fn register<'js>(ctx: &Ctx<'js>, natives: &Object<'js>) -> Result<()> {
    natives.set(
        "evaluateModule",
        Function::new(ctx.clone(), evaluate_module)?,
    )?;
    natives.set("compile", Function::new(ctx.clone(), compile)?)?;
    Ok(())
}
