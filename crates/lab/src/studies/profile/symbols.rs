//! Code addresses to names: the return address of a lock's first
//! contended caller, resolved to the function it lies in and the offset
//! into it, from the module's own symbol table (`.symtab`, else the
//! dynamic symbols), C++ names demangled. A stripped module gives its file
//! name and the offset into it instead.

use super::parse::Caller;
use object::{Object, ObjectKind, ObjectSymbol, SymbolKind};
use std::collections::HashMap;
use std::path::Path;

/// One module's function symbols: (start, size, name), by start.
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
    let mut table: Table = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
        .filter(|(_, _, n)| !n.is_empty())
        .collect();
    table.sort();
    table.dedup_by_key(|(a, _, _)| *a);
    Some((absolute, table))
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
            let probe = at.wrapping_sub(1);
            let i = table.partition_point(|(a, _, _)| *a <= probe);
            if i > 0 {
                let (start, size, name) = &table[i - 1];
                if *size == 0 || probe < start + size {
                    return format!("{}+{:#x} ({file})", demangle(name), at - start);
                }
            }
        }
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

    #[test]
    fn demangles_cpp() {
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(demangle("plain_c"), "plain_c");
    }
}
