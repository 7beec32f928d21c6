//! Code addresses to names: the return address of a lock's first
//! contended caller, resolved to the function it lies in and the offset
//! into it, from the module's own symbol table (`.symtab`, else the
//! dynamic symbols), C++ names demangled.
//!
//! A symbol names an address only if it covers it: a defined function
//! symbol whose ELF size says it spans the address (`[value, value +
//! size)`). The nearest symbol before the address is not enough: a
//! stripped program keeps only its exported (dynamic) symbols, and most of
//! its code lies between them in functions that have no name left, so
//! "nearest before" once named a caller deep inside pigz `malloc+0xdc82`
//! (an import, which has no code in the program at all). Where no symbol
//! covers the address, the answer is the module's file name and the offset
//! into it (`pigz+0x1a2b`), which is always true and which `addr2line` or
//! `objdump` can take further.
//!
//! A symbol of size 0 (hand-written assembly without `.size`, linker
//! markers like `_end`, imports given a PLT address) covers nothing: its
//! extent is unknown, and "up to the next symbol" is exactly the guess
//! that fails in a stripped module, where the next symbol may be far away
//! past unnamed functions. An import (an undefined symbol) is never a
//! name for code in the module either, whatever address it carries.

use crate::studies::shared::lock_profile::Caller;
use object::{Object, ObjectKind, ObjectSymbol, SymbolKind};
use std::collections::HashMap;
use std::path::Path;

/// One module's defined function symbols of known size: (start, size,
/// name), by start.
type Table = Vec<(u64, u64, String)>;

/// Resolves addresses, reading each module once.
#[derive(Default)]
pub struct Resolver {
    modules: HashMap<String, Option<(bool, Table)>>,
}

/// A symbol's name for people.
fn demangle(name: &str) -> String {
    if name.starts_with("_Z") {
        if let Ok(s) = cpp_demangle::Symbol::new(name) {
            if let Ok(d) = s.demangle() {
                return d;
            }
        }
    }
    name.to_string()
}

/// Whether `path`'s module is position-dependent (its symbols are
/// absolute addresses), and its function symbols.
fn load(path: &str) -> Option<(bool, Table)> {
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let absolute = file.kind() == ObjectKind::Executable;
    let table = table(
        file.symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && !s.is_undefined())
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string()))),
    );
    Some((absolute, table))
}

/// The table of the symbols `(start, size, name)`: those that can cover
/// an address (a start, a size, a name), sorted by start, one per start
/// (the largest, so that an alias of size 0 or a shorter entry point does
/// not hide the function; among equals the first name in order, so that
/// the same module always gives the same name).
fn table(symbols: impl Iterator<Item = (u64, u64, String)>) -> Table {
    let mut table: Table = symbols
        .filter(|(start, size, name)| *start != 0 && *size > 0 && !name.is_empty())
        .collect();
    table.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    table.dedup_by_key(|(start, _, _)| *start);
    table
}

/// The symbol that covers `addr` (`start <= addr < start + size`) and its
/// start; the innermost (latest start) where symbols nest.
fn covering(table: &Table, addr: u64) -> Option<(u64, &str)> {
    let i = table.partition_point(|(start, _, _)| *start <= addr);
    table[..i]
        .iter()
        .rev()
        .find(|(start, size, _)| addr - start < *size)
        .map(|(start, _, name)| (*start, name.as_str()))
}

impl Resolver {
    /// `function+0xOFF (module)`, or `module+0xOFF` where the module has no
    /// symbol for it. `exe` is the program's path (the loader names the
    /// program itself as it was started, maybe relative).
    pub fn describe(&mut self, c: &Caller, exe: &str) -> String {
        let path = if c.module.is_empty() || !c.module.starts_with('/') {
            exe.to_string()
        } else {
            c.module.clone()
        };
        let file = Path::new(&path)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.clone());
        let entry = self
            .modules
            .entry(path.clone())
            .or_insert_with(|| load(&path));
        if let Some((absolute, table)) = entry {
            let at = if *absolute {
                c.ip
            } else {
                c.ip.wrapping_sub(c.base)
            };
            // The return address is just past the call: look up the byte
            // before it.
            if let Some((start, name)) = covering(table, at.wrapping_sub(1)) {
                return format!("{}+{:#x} ({file})", demangle(name), at - start);
            }
            // The module was read and no symbol covers the address: the
            // loader's nearest symbol would be a guess (some loaders give
            // the nearest before, whatever its size), so say where it is.
            return format!("{file}+{:#x}", c.ip.wrapping_sub(c.base));
        }
        // The module could not be read: the loader's symbol, the only one
        // there is.
        if !c.dyn_symbol.is_empty() && c.dyn_addr != 0 && c.ip >= c.dyn_addr {
            return format!(
                "{}+{:#x} ({file})",
                demangle(&c.dyn_symbol),
                c.ip - c.dyn_addr
            );
        }
        format!("{file}+{:#x}", c.ip.wrapping_sub(c.base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function of this test binary, found by its own address.
    #[test]
    fn finds_a_function_of_this_program() {
        #[inline(never)]
        #[no_mangle]
        extern "C" fn locklab_symbols_probe() -> u64 {
            std::hint::black_box(7)
        }
        let exe = std::env::current_exe().unwrap();
        let exe = exe.to_str().unwrap();
        // SAFETY: a zeroed Dl_info for dladdr to fill.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        let f = locklab_symbols_probe as *const () as usize;
        // SAFETY: dladdr reads the loader's tables.
        assert_ne!(unsafe { libc::dladdr(f as *const _, &mut info) }, 0);
        let c = Caller {
            ip: f as u64 + 5,
            base: info.dli_fbase as u64,
            dyn_symbol: String::new(),
            dyn_addr: 0,
            module: exe.to_string(),
        };
        let mut r = Resolver::default();
        let d = r.describe(&c, exe);
        assert!(d.starts_with("locklab_symbols_probe+0x5 ("), "{d}");
        // Nothing to read: the module and the offset.
        let lost = Caller {
            module: "/nonexistent/libx.so".into(),
            ..c
        };
        assert_eq!(
            r.describe(&lost, exe),
            format!("libx.so+{:#x}", lost.ip - lost.base)
        );
        assert_eq!(locklab_symbols_probe(), 7);
    }

    /// Only a symbol whose size spans the address names it: beyond its
    /// end, between symbols, under one of size 0, there is no name.
    #[test]
    fn a_symbol_names_only_what_it_covers() {
        let t = table(
            [
                (0x1000, 0x40, "first"),
                // A marker or hand-written assembly without a size.
                (0x1100, 0, "zero_size"),
                (0x1200, 0x100, "outer"),
                // Nested: an entry point inside `outer`.
                (0x1280, 0x10, "inner"),
                // An alias of size 0 at the start of a sized function.
                (0x2000, 0, "alias"),
                (0x2000, 0x20, "sized"),
                (0, 0x10, "at_zero"),
                (0x3000, 0x10, ""),
            ]
            .into_iter()
            .map(|(a, z, n)| (a, z, n.to_string())),
        );
        let name = |addr| covering(&t, addr).map(|(s, n)| (s, n.to_string()));
        assert_eq!(name(0x1000), Some((0x1000, "first".into())));
        assert_eq!(name(0x103f), Some((0x1000, "first".into())));
        // Past the end of `first`, and far past a symbol of size 0.
        assert_eq!(name(0x1040), None);
        assert_eq!(name(0x1100), None);
        assert_eq!(name(0x11f0), None);
        assert_eq!(name(0x1284), Some((0x1280, "inner".into())));
        assert_eq!(name(0x1290), Some((0x1200, "outer".into())));
        assert_eq!(name(0x12ff), Some((0x1200, "outer".into())));
        assert_eq!(name(0x1300), None);
        assert_eq!(name(0x2010), Some((0x2000, "sized".into())));
        assert_eq!(name(0x5), None);
        assert_eq!(name(0x3008), None);
        assert_eq!(name(u64::MAX), None);
    }

    /// A module that was read but has no symbol over the address gives
    /// the file and the offset, not the loader's nearest symbol.
    #[test]
    fn uncovered_addresses_are_file_and_offset() {
        let exe = std::env::current_exe().unwrap();
        let exe = exe.to_str().unwrap();
        let c = Caller {
            // Past every function of this test program (a position-
            // independent one: addresses are relative to the base).
            ip: 0x7000_0000_0000 + (1 << 40),
            base: 0x7000_0000_0000,
            dyn_symbol: "malloc".into(),
            dyn_addr: 0x7000_0000_0000 + 0x100,
            module: exe.to_string(),
        };
        let file = Path::new(exe).file_name().unwrap().to_string_lossy();
        assert_eq!(
            Resolver::default().describe(&c, exe),
            format!("{file}+{:#x}", 1u64 << 40)
        );
    }

    #[test]
    fn demangles_cpp() {
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(demangle("plain_c"), "plain_c");
    }
}
