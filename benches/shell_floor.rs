//! The floor for the shell component: the same engine configuration (fuel
//! off), a bare WASI context with memory pipes, `programs` stubbed to
//! refuse, `InstancePre`, one `eval("echo hi")`, drop. No workspace,
//! envelope or classification: what wasmtime itself costs for this
//! component.

use crate::support::BareState as State;
use plimsoll::engine::SandboxEngine;
use wasmtime::Store;
use wasmtime::component::{InstancePre, Linker};

pub struct Bare {
    engine: SandboxEngine,
    pre: InstancePre<State>,
}

impl Bare {
    pub fn new(path: &std::path::Path) -> Bare {
        let engine = SandboxEngine::new(plimsoll::EngineOptions {
            fuel: false,
            ..Default::default()
        })
        .expect("engine");
        let mut linker = Linker::new(engine.engine());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("link");
        let component =
            wasmtime::component::Component::from_file(engine.engine(), path).expect("compile");
        // `echo hi` starts no program: a stub that traps is enough.
        linker
            .instance("plimsoll:sandbox/programs@0.1.3")
            .expect("programs")
            .func_new("run", |_, _, _, _| {
                Err(wasmtime::Error::msg("no programs in the floor"))
            })
            .expect("stub");
        let pre = linker.instantiate_pre(&component).expect("pre");
        Bare { engine, pre }
    }

    /// A whole run: instantiate, `eval(script)`, drop.
    pub async fn eval(&self, script: &str) {
        let mut store = Store::new(self.engine.engine(), State::new());
        store.set_epoch_deadline(u64::MAX / 2);
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .expect("instantiate");
        let eval = instance
            .get_typed_func::<(&str,), (Result<String, String>,)>(&mut store, "eval")
            .expect("eval export");
        let (r,) = eval.call_async(&mut store, (script,)).await.expect("call");
        assert_eq!(r.as_deref(), Ok("0"), "{r:?}");
    }
}
