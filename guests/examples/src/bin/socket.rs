//! Hostile: tries to open sockets. The port to try is read from stdin.
//! Prints `blocked <what>` or `OPEN <what>` per attempt.
use std::io::Read;
use std::net::{TcpListener, TcpStream, UdpSocket};

fn main() {
    let mut s = String::new();
    let _ = std::io::stdin().read_to_string(&mut s);
    let port: u16 = s.trim().parse().unwrap_or(80);
    match TcpStream::connect(("127.0.0.1", port)) {
        Ok(_) => println!("OPEN tcp connect"),
        Err(_) => println!("blocked tcp connect"),
    }
    match TcpListener::bind("0.0.0.0:0") {
        Ok(_) => println!("OPEN tcp listen"),
        Err(_) => println!("blocked tcp listen"),
    }
    match UdpSocket::bind("0.0.0.0:0") {
        Ok(sock) => match sock.send_to(b"x", ("127.0.0.1", port)) {
            Ok(_) => println!("OPEN udp send"),
            Err(_) => println!("blocked udp send"),
        },
        Err(_) => println!("blocked udp bind"),
    }
    match std::net::ToSocketAddrs::to_socket_addrs(&("localhost", port)) {
        Ok(mut a) => match a.next() {
            Some(_) => println!("OPEN dns"),
            None => println!("blocked dns"),
        },
        Err(_) => println!("blocked dns"),
    }
}
