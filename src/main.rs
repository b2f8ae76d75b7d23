fn main() {
    std::process::exit(vfsmc::cli::main());
}
