//! Hostile: looks for the host's environment and arguments. Prints what it
//! found; the host gives it none.
fn main() {
    let vars: Vec<_> = std::env::vars_os().collect();
    let args: Vec<_> = std::env::args_os().collect();
    println!("env {}", vars.len());
    for (k, v) in &vars {
        println!("var {}={}", k.to_string_lossy(), v.to_string_lossy());
    }
    println!("args {}", args.len());
    for a in &args {
        println!("arg {}", a.to_string_lossy());
    }
    match std::env::current_dir() {
        Ok(d) => println!("cwd {}", d.display()),
        Err(_) => println!("cwd none"),
    }
}
