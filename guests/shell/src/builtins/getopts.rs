//! `getopts`: one option per call, state in `OPTIND` (and a hidden
//! position within clustered options).

use super::complain;
use crate::bytes::lossy;
use crate::exec::{R, Shell};
use crate::io::Io;

/// `getopts OPTSTRING NAME [ARGS…]`.
pub fn getopts(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    if argv.len() < 3 {
        complain(io, "getopts", "usage: getopts optstring name [arg ...]");
        return Ok(2);
    }
    let spec = argv[1].clone();
    let var = argv[2].clone();
    let args: Vec<Vec<u8>> = if argv.len() > 3 {
        argv[3..].to_vec()
    } else {
        sh.params.as_ref().clone()
    };
    let silent = spec.first() == Some(&b':');
    let optind: usize = sh
        .vars
        .value(b"OPTIND")
        .and_then(|v| lossy(&v).trim().parse().ok())
        .unwrap_or(1)
        .max(1);
    let mut pos: usize = sh
        .vars
        .value(b"__getopts_pos")
        .and_then(|v| lossy(&v).parse().ok())
        .unwrap_or(1);
    let done = |sh: &mut Shell, idx: usize| {
        let _ = sh.vars.set(&var, b"?".to_vec());
        let _ = sh.vars.set(b"OPTIND", idx.to_string().into_bytes());
        let _ = sh.vars.unset(b"__getopts_pos");
        Ok(1)
    };
    let Some(arg) = args.get(optind - 1) else {
        return done(sh, optind);
    };
    if pos == 1 && (arg.len() < 2 || arg[0] != b'-' || arg == b"--") {
        let next = if arg == b"--" { optind + 1 } else { optind };
        return done(sh, next);
    }
    if pos >= arg.len() {
        pos = 1;
    }
    let c = arg[pos];
    let mut next_ind = optind;
    let mut next_pos = pos + 1;
    if next_pos >= arg.len() {
        next_ind += 1;
        next_pos = 1;
    }
    let spec_at = spec.iter().position(|&s| s == c && c != b':');
    let mut status = 0;
    match spec_at {
        None => {
            if !silent {
                complain(io, "getopts", &format!("illegal option -- {}", c as char));
                let _ = sh.vars.unset(b"OPTARG");
            } else {
                let _ = sh.vars.set(b"OPTARG", vec![c]);
            }
            let _ = sh.vars.set(&var, b"?".to_vec());
        }
        Some(i) if spec.get(i + 1) == Some(&b':') => {
            let optarg = if pos + 1 < arg.len() {
                next_ind = optind + 1;
                next_pos = 1;
                Some(arg[pos + 1..].to_vec())
            } else {
                let a = args.get(optind).cloned();
                next_ind = optind + 2;
                next_pos = 1;
                a
            };
            match optarg {
                Some(v) => {
                    let _ = sh.vars.set(b"OPTARG", v);
                    let _ = sh.vars.set(&var, vec![c]);
                }
                None => {
                    if silent {
                        let _ = sh.vars.set(&var, b":".to_vec());
                        let _ = sh.vars.set(b"OPTARG", vec![c]);
                    } else {
                        complain(
                            io,
                            "getopts",
                            &format!("option requires an argument -- {}", c as char),
                        );
                        let _ = sh.vars.set(&var, b"?".to_vec());
                    }
                    status = 0;
                }
            }
        }
        Some(_) => {
            let _ = sh.vars.set(&var, vec![c]);
            let _ = sh.vars.unset(b"OPTARG");
        }
    }
    let _ = sh.vars.set(b"OPTIND", next_ind.to_string().into_bytes());
    let _ = sh
        .vars
        .set(b"__getopts_pos", next_pos.to_string().into_bytes());
    Ok(status)
}
