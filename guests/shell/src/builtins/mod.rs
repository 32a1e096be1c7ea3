//! Builtins: commands that run inside the shell and may change its state.

mod core;
mod getopts;
mod io;
mod shellcmd;
mod test;
mod vars;

pub use shellcmd::{child_shell_args, run_path};
pub use test::test_args;

use crate::exec::{R, Shell};
use crate::io::Io;

/// A builtin: the shell, the command's descriptors, `argv` (with its name).
pub type Builtin = fn(&mut Shell, &Io, &[Vec<u8>]) -> R;

/// Every builtin by name.
const TABLE: &[(&str, Builtin)] = &[
    (":", core::colon),
    ("true", core::colon),
    ("false", core::false_),
    ("cd", core::cd),
    ("pwd", core::pwd),
    ("exit", core::exit),
    ("logout", core::exit),
    ("return", core::return_),
    ("shift", core::shift),
    ("break", core::break_),
    ("continue", core::continue_),
    ("let", core::let_),
    ("umask", core::umask),
    ("wait", core::colon),
    ("hash", core::colon),
    ("alias", core::colon),
    ("unalias", core::colon),
    ("shopt", core::colon),
    ("history", core::colon),
    ("disown", core::colon),
    ("jobs", core::colon),
    ("trap", core::trap),
    ("ulimit", core::ulimit),
    ("times", core::times),
    ("kill", core::kill),
    ("pushd", core::pushd),
    ("popd", core::popd),
    ("dirs", core::dirs),
    ("set", vars::set),
    ("unset", vars::unset),
    ("export", vars::export),
    ("readonly", vars::readonly),
    ("local", vars::local),
    ("declare", vars::declare),
    ("typeset", vars::declare),
    ("getopts", getopts::getopts),
    ("test", test::test),
    ("[", test::bracket),
    ("echo", io::echo),
    ("printf", io::printf),
    ("read", io::read),
    ("mapfile", io::mapfile),
    ("readarray", io::mapfile),
    (".", shellcmd::source),
    ("source", shellcmd::source),
    ("eval", shellcmd::eval),
    ("exec", shellcmd::exec),
    ("command", shellcmd::command),
    ("builtin", shellcmd::builtin),
    ("type", shellcmd::type_),
    ("which", shellcmd::which),
    ("sh", shellcmd::sh),
    ("bash", shellcmd::sh),
    ("dash", shellcmd::sh),
    ("env", shellcmd::env),
    ("xargs", shellcmd::xargs),
    ("time", shellcmd::time),
    ("timeout", shellcmd::timeout),
    ("nohup", shellcmd::nohup),
    ("nice", shellcmd::nohup),
];

/// The builtin called `name`.
pub fn lookup(name: &[u8]) -> Option<Builtin> {
    TABLE
        .iter()
        .find(|(n, _)| n.as_bytes() == name)
        .map(|(_, f)| *f)
}

/// Every builtin name (for documentation tests).
pub fn names() -> impl Iterator<Item = &'static str> {
    TABLE.iter().map(|(n, _)| *n)
}

/// Names of the builtins that are also files in `/usr/bin` on a Linux
/// system (`which` and `command -v` show those as paths).
pub const ALSO_UTILITIES: &[&str] = &[
    "true", "false", "pwd", "test", "[", "echo", "printf", "kill", "env", "xargs", "sh", "bash",
    "dash", "timeout", "nohup", "nice", "time",
];

/// Writes `sh: NAME: msg` to `io`'s stderr.
pub(crate) fn complain(io: &Io, name: &str, msg: &str) {
    let _ = crate::io::put(&io.stderr(), format!("sh: {name}: {msg}\n").as_bytes());
}
