//! The `irqwise` command line: parse, dispatch, turn errors into messages and exit codes.

fn main() {
    println!("irqwise {}", env!("CARGO_PKG_VERSION"));
}
