//! Hostile text ends in an error or a limit, never a crash: deep nesting,
//! fork bombs, huge expansions, endless producers, long commands.

mod common;
use common::*;

/// Runs `f` on a thread with a small stack: the guest's own stack is
/// small too, so the limits must hold well within it.
fn with_stack<T: Send + 'static>(bytes: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(bytes)
        .spawn(f)
        .expect("thread")
        .join()
        .expect("the shell overflowed its stack")
}

fn run_small_stack(script: String) -> Out {
    with_stack(STACK, move || small_stack_work().sh(&script))
}

/// A workspace whose shell may use three quarters of [`STACK`].
fn small_stack_work() -> Work {
    Work {
        stack: STACK / 4 * 3,
        ..Work::new()
    }
}

/// The stack the deepest accepted nesting must fit in (debug build).
const STACK: usize = if cfg!(debug_assertions) {
    8 << 20
} else {
    1 << 20
};

#[test]
fn deep_parentheses_are_a_syntax_error() {
    let script = format!("{}echo hi{}", "( ".repeat(200_000), " )".repeat(200_000));
    let o = run_small_stack(script);
    assert_eq!(o.status, 2);
    assert!(o.err().contains("nesting too deep"), "{}", o.err());
    let script = format!("{}echo hi{}", "(".repeat(200_000), ")".repeat(200_000));
    let o = run_small_stack(script);
    assert_ne!(o.status, 0);
    assert!(o.err().len() < 400, "the message is short");
}

#[test]
fn every_nesting_construct_is_bounded() {
    let n = 100_000;
    for script in [
        format!("x={}echo hi{}", "$(".repeat(n), ")".repeat(n)),
        format!("{}echo hi; {}", "{ ".repeat(n), "}; ".repeat(n)),
        format!("echo \"{}x{}\"", "$(echo \"".repeat(n), "\")".repeat(n)),
        format!("echo {}y{}", "${x:-".repeat(n), "}".repeat(n)),
        format!("[[ {}a{} ]]", "( ".repeat(n), " )".repeat(n)),
        format!("{}echo x{}", "if true; then ".repeat(n), "; fi".repeat(n)),
        format!("echo $(({}1{}))", "(".repeat(n), ")".repeat(n)),
        format!("echo {}", "`echo \\".repeat(200)),
        format!("f() {{ {} }}", "while true; do ".repeat(n)),
        format!(
            "awk 'BEGIN {{ print {}1{} }}'",
            "(".repeat(n),
            ")".repeat(n)
        ),
        format!("test {} x", "\\( ".repeat(n)),
        format!("find . {} -print", "! ".repeat(n)),
    ] {
        let o = run_small_stack(script.clone());
        assert_ne!(o.status, 0, "{}", &script[..80.min(script.len())]);
    }
}

#[test]
fn accepted_nesting_runs_within_the_stack() {
    // Just under the limits: must work, not overflow.
    let script = format!("{}echo deep{}", "( ".repeat(120), " )".repeat(120));
    let o = run_small_stack(script);
    assert_eq!((o.out(), o.status), ("deep\n".into(), 0), "{}", o.err());
    let script = format!("echo {}x{}", "$(echo ".repeat(120), ")".repeat(120));
    let o = run_small_stack(script);
    assert_eq!((o.out(), o.status), ("x\n".into(), 0), "{}", o.err());
    let o = run_small_stack(
        "f() { if [ $1 -gt 0 ]; then f $(($1-1)); else echo bottom; fi; }; f 120".into(),
    );
    assert_eq!((o.out(), o.status), ("bottom\n".into(), 0), "{}", o.err());
    let o = run_small_stack("e='eval \"$e\"'; eval \"$e\"".into());
    assert_eq!(o.status, 2);
}

#[test]
fn fork_bomb_and_runaway_recursion_stop_at_the_call_depth() {
    let o = run_small_stack(":(){ :|:& };:".into());
    assert_eq!(o.status, 2);
    assert!(o.err().contains("maximum nesting level"), "{}", o.err());
    let o = run_small_stack("f() { f; }; f; echo never".into());
    assert_eq!(o.status, 2);
    assert_eq!(o.out(), "");
    let o = run_small_stack("trap 'echo trap ran' EXIT; f() { f; }; f".into());
    assert_eq!(o.out(), "trap ran\n");
    let o = run_small_stack("echo 'sh x.sh' > x.sh; sh x.sh".into());
    assert_eq!(o.status, 2);
    let o = run_small_stack("awk 'function f(n) { return f(n+1) } BEGIN { f(1) }'".into());
    assert_eq!(o.status, 2);
}

#[test]
fn huge_expansions_hit_the_caps() {
    let w = Work::new();
    let o = w.sh("x=$(seq 1 100000000); echo aborted\necho survived $?");
    assert!(o.err().contains("exceeds the limit"), "{}", o.err());
    assert_eq!(o.status, 0);
    assert_eq!(o.out(), "survived 1\n");
    let o = w.sh("for i in $(seq 1 100000000); do :; done\necho next");
    assert_eq!(o.out(), "next\n");
    let o = w.sh("echo {1..100000000} | wc -c");
    assert!(o.err().contains("brace expansion"), "{}", o.err());
    let o = w.sh("x=aaaaaaaaaaaaaaaa; while true; do x=$x$x; done");
    assert_ne!(o.status, 0);
    assert!(
        o.err().contains("limit") || o.err().contains("too large"),
        "{}",
        o.err()
    );
    let o = w.sh("x=$(printf '%*s' 20000000 y); echo ${#x}");
    assert!(o.err().contains("limit"), "{}", o.err());
}

#[test]
fn endless_producers_stop_when_the_pipe_fills() {
    let w = Work::new();
    let o = w.sh("yes | head -n 2; yes hello | head -c 12; echo; yes | grep -c y | head -1 >/dev/null; echo end");
    assert_eq!(o.out(), "y\ny\nhello\nhello\n\nend\n");
    let o = w.sh("seq 1 1000000000 | tail -n 1");
    assert!(o.err().contains("pipe buffer limit"), "{}", o.err());
}

#[test]
fn a_four_megabyte_command_runs() {
    let w = Work::new();
    let arg = "a".repeat(4 << 20);
    let o = w.sh(&format!("x='{arg}'; echo ${{#x}}; echo {arg} | wc -c"));
    assert_eq!(o.out(), format!("{}\n{}\n", 4 << 20, (4 << 20) + 1));
    let many = "echo x\n".repeat(300_000);
    let o = w.sh(&many);
    assert_eq!(o.stdout.len(), 600_000);
}

#[test]
fn write_errors_are_ignored_and_output_continues() {
    use std::cell::RefCell;
    use std::rc::Rc;
    struct Broken;
    impl std::io::Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("cut"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Err(std::io::Error::other("cut"))
        }
    }
    let w = Work::new();
    let status = plimsoll_shell::eval(
        b"echo lost; seq 100000; echo saved > after.txt; exit 5",
        plimsoll_shell::Config {
            root: w.path().to_path_buf(),
            programs: w.programs.clone(),
            stdin: Box::new(std::io::empty()),
            stdout: Rc::new(RefCell::new(Broken)),
            stderr: Rc::new(RefCell::new(Broken)),
            stack: TEST_STACK_BUDGET,
        },
    );
    assert_eq!(status, 5);
    assert_eq!(w.read("after.txt"), b"saved\n");
}

/// `n` copies of `unit` joined (for long operator chains).
fn chain(first: &str, unit: &str, n: usize) -> String {
    let mut s = String::from(first);
    for _ in 0..n {
        s.push_str(unit);
    }
    s
}

#[test]
fn long_operator_chains_are_errors_not_deep_trees() {
    let n = 300_000;
    for (script, msg) in [
        (
            format!(": $(({}))", chain("1", "+1", n)),
            "expression too long",
        ),
        (
            format!("[[ {} ]]", chain("a", " || a", n)),
            "expression too long",
        ),
        (
            format!("awk 'BEGIN {{ x = {} }}'", chain("1", "+1", n)),
            "program too large",
        ),
        (
            format!("find . {}", "-true ".repeat(n)),
            "expression too long",
        ),
    ] {
        let o = run_small_stack(script.clone());
        assert_ne!(o.status, 0, "{}", &script[..40]);
        assert!(o.err().contains(msg), "{}: {}", &script[..40], o.err());
    }
    // Shorter chains are flat and work.
    let o = run_small_stack(format!(
        "echo $(({})); [[ {} ]] && echo or; awk 'BEGIN {{ print {} }}'; find . -maxdepth 0 {} -print",
        chain("1", "+1", 4_000),
        chain("''", " || a", 4_000),
        chain("1", "+1", 20_000),
        "-true ".repeat(4_000)
    ));
    assert_eq!(o.out(), "4001\nor\n20001\n.\n", "{}", o.err());
}

#[test]
fn commands_that_run_commands_count_nesting() {
    for script in [
        format!("{}true", "command ".repeat(500_000)),
        format!("{}:", "exec ".repeat(500_000)),
        format!("{}true", "builtin command ".repeat(100_000)),
        format!("{}true", "env ".repeat(100_000)),
        format!("{}true", "nice time ".repeat(50_000)),
        format!("echo | {}echo hi", "xargs ".repeat(20_000)),
        "touch a b c; find . -type f -exec sh -c 'f(){ f; }; f' \\;; echo never".to_string(),
    ] {
        let o = run_small_stack(script.clone());
        assert_eq!(o.status, 2, "{}: {}", &script[..30], o.err());
        assert!(o.err().contains("maximum nesting level"), "{}", o.err());
        assert!(!o.out().contains("never"));
        // The limit ends everything at once: one message.
        assert_eq!(o.err().matches("maximum nesting").count(), 1, "{}", o.err());
    }
    // awk's system() and pipes stop too, instead of running on.
    let o = run_small_stack(
        "echo 'BEGIN { while (1) system(\"awk -f x.awk\") }' > x.awk; awk -f x.awk; echo never"
            .into(),
    );
    assert_eq!(o.status, 2, "{}", o.err());
    assert!(!o.out().contains("never"));
}

#[test]
fn nesting_limits_do_not_multiply() {
    // Compound nesting inside deep calls, substitutions inside nested
    // loops: the stack guard ends them cleanly, with the EXIT trap.
    for script in [
        format!(
            "f() {{ {}f{} }}; f",
            "if true; then ".repeat(60),
            "; fi".repeat(60)
        ),
        format!("f() {{ {}f; {}}}; f", "{ ".repeat(60), "}; ".repeat(60)),
        format!(
            "f() {{ {}echo $(f){} }}; f",
            "while true; do ".repeat(30),
            "; break; done".repeat(30)
        ),
    ] {
        let o = run_small_stack(format!("trap 'echo trap ran' EXIT; {script}"));
        assert_eq!(o.status, 2, "{}", o.err());
        assert!(o.err().contains("maximum nesting level"), "{}", o.err());
        assert_eq!(o.out(), "trap ran\n");
    }
    // Deep expressions at the bottom of deep calls run or fail cleanly.
    let bottom = |inner: &str| {
        format!(
            "f() {{ if [ $1 -gt 0 ]; then f $(($1-1)); else {inner}; fi; }}; f 100; echo status $?"
        )
    };
    for inner in [
        format!(
            "{}echo ok{}",
            "if true; then ".repeat(60),
            "; fi".repeat(60)
        ),
        format!("echo $(({}1{}))", "(".repeat(50), ")".repeat(50)),
        format!("echo {}ok{}", "${x:-".repeat(100), "}".repeat(100)),
        format!("[[ {}a{} ]] && echo ok", "( ".repeat(100), " )".repeat(100)),
        "awk 'function g(n) { return n > 0 ? g(n-1) : 0 } BEGIN { print g(199) }'".into(),
        format!("eval '{}echo ok{}'", "( ".repeat(20), " )".repeat(20)),
    ] {
        // Either it ran, or a limit ended it with a message: no overflow.
        let o = run_small_stack(bottom(&inner));
        let ran = o.out().ends_with("status 0\n");
        assert!(ran || !o.err().is_empty(), "{}", o.err());
    }
}

#[test]
fn pipe_buffers_share_one_budget() {
    let o = with_stack(STACK, || {
        let o = small_stack_work().sh("f() { yes | f; }; f");
        // Every buffer was released when the evaluation ended.
        assert_eq!(plimsoll_shell::io::buffered(), 0);
        o
    });
    assert_eq!(o.status, 2, "{}", o.err());
    assert!(o.err().contains("maximum nesting level"), "{}", o.err());
}

#[test]
fn arguments_held_by_nested_commands_share_one_budget() {
    let w = Work::new();
    let o = w.sh(
        "x=$(printf '%1000000s' | tr ' ' a); a=(); for i in $(seq 60); do a+=(\"$x\"); done\n\
         f() { f \"$@\"; }; f \"${a[@]}\"\necho after $?",
    );
    assert!(o.err().contains("arguments exceed 256 MiB"), "{}", o.err());
    assert_eq!(o.out(), "after 1\n");
}
