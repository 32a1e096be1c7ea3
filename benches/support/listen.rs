//! A `plimsolld` started by a daemon benchmark, once it listens, and its
//! answers read off a keep-alive connection.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

/// Spawns `cmd` (a `plimsolld` with `PLIMSOLL_LISTEN=127.0.0.1:0`) with
/// its stderr piped, and waits for the line naming the address it listens
/// on; the rest of its stderr is drained in the background.
pub fn spawn_listening(cmd: &mut Command) -> (Child, SocketAddr) {
    let mut child = cmd.stderr(Stdio::piped()).spawn().expect("spawn plimsolld");
    let err = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(err).lines();
    let mut said = Vec::new();
    let addr: SocketAddr = loop {
        let Some(line) = lines.next().and_then(Result::ok) else {
            panic!("plimsolld exited before listening:\n{}", said.join("\n"));
        };
        said.push(line.clone());
        if let Some(rest) = line.split("http://").nth(1) {
            break rest
                .split(' ')
                .next()
                .and_then(|a| a.parse().ok())
                .expect("address");
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

/// Reads one HTTP/1.1 response (status line, headers, a `Content-Length`
/// body) from a keep-alive connection into `body`; its status.
pub fn read_response(reader: &mut impl BufRead, body: &mut Vec<u8>) -> u16 {
    let mut line = String::new();
    reader.read_line(&mut line).expect("status");
    let status: u16 = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut len = 0usize;
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header");
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    body.resize(len, 0);
    reader.read_exact(body).expect("body");
    status
}
