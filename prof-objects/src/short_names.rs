//! `--short-names`: demangled C++ and Rust names without template arguments, parameters and
//! return types (`std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(…)`
//! reads `std::vector::_M_realloc_insert`), as pprof shortens them: C++ names hundreds of
//! characters long make a flat profile unreadable. Operators (`operator()`, `operator<<`),
//! `(anonymous namespace)` and lambdas (`{lambda(int)#1}` as `{lambda#1}`) keep their shape.

const ANONYMOUS: &str = "(anonymous namespace)";
/// It, as one word while the name is taken apart.
const ANONYMOUS_WORD: &str = "\u{1}anonymous\u{1}";

/// `name` without its template arguments, parameters and return type.
pub fn shorten(name: &str) -> String {
    // A Rust qualified path, `<alloc::vec::Vec<T> as core::ops::Drop>::drop`: its two paths
    // shortened, the brackets kept.
    if let Some((inner, rest)) = name.strip_prefix('<').and_then(split_at_closing) {
        if let Some((ty, tr)) = inner.split_once(" as ") {
            return format!("<{} as {}>{}", shorten(ty), shorten(tr), shorten_tail(rest));
        }
    }
    shorten_tail(name)
}

/// `text` (after a `<`) split at the `>` that closes it.
fn split_at_closing(text: &str) -> Option<(&str, &str)> {
    let mut depth = 1usize;
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return Some((&text[..i], &text[i + 1..]));
                }
            }
            _ => {}
        }
    }
    None
}

fn shorten_tail(name: &str) -> String {
    if name.is_empty() {
        return String::new();
    }
    // Keep the text at bracket depth 0, operators' symbols and the anonymous namespace.
    let mut kept = String::with_capacity(name.len());
    let mut depth = 0usize;
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if depth == 0 {
            if let Some(tail) = rest.strip_prefix(ANONYMOUS) {
                kept.push_str(ANONYMOUS_WORD);
                rest = tail;
                continue;
            }
            if let Some(tail) = rest.strip_prefix("operator") {
                let symbol = operator_symbol(tail);
                kept.push_str("operator");
                // `operator new` is one word too.
                kept.push_str(&symbol.replace(' ', "\u{2}"));
                rest = &tail[symbol.len()..];
                continue;
            }
        }
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => kept.push(c),
            _ => {}
        }
        rest = &rest[c.len_utf8()..];
    }
    // The return type and qualifiers: the name is the last word that is not a qualifier.
    let last = kept.split(' ').rfind(|w| !w.is_empty() && !matches!(*w, "const" | "volatile" | "&" | "&&" | "noexcept"));
    match last {
        Some(word) => word.replace(ANONYMOUS_WORD, ANONYMOUS).replace('\u{2}', " "),
        None => name.to_string(),
    }
}

/// The symbol of an operator after the word `operator`: `()`, `<<=`, `[]`, `->*`, ` new[]`;
/// empty for a conversion operator or a name that merely starts with "operator".
fn operator_symbol(after: &str) -> &str {
    const SYMBOLS: [&str; 42] = [
        "()", "[]", "->*", "->", "<<=", ">>=", "<=>", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--", "+=",
        "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<", ">", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=", ",",
        " new[]", " delete[]", " new",
    ];
    if after.starts_with(" delete") && !after.starts_with(" delete[]") {
        return &after[..7];
    }
    SYMBOLS.iter().find(|s| after.starts_with(**s)).map_or("", |s| &after[..s.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_names_lose_templates_parameters_and_return_types() {
        let cases = [
            (
                "void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int const&)",
                "std::vector::_M_realloc_insert",
            ),
            ("std::enable_if<std::__and_<std::__not_<std::__is_tuple_like<double> > >::value, void>::type std::swap<double>(double&, double&)", "std::swap"),
            ("Matrix::operator()(int, int) const", "Matrix::operator()"),
            ("std::basic_ostream<char>& std::operator<< <std::char_traits<char> >(std::basic_ostream<char>&, char const*)", "std::operator<<"),
            ("bool operator<(Key const&, Key const&)", "operator<"),
            ("(anonymous namespace)::hot_loop(int)", "(anonymous namespace)::hot_loop"),
            ("main::{lambda(int)#1}::operator()(int) const", "main::{lambda#1}::operator()"),
            ("operator new(unsigned long)", "operator new"),
            ("fib", "fib"),
            ("core::ptr::drop_in_place<alloc::vec::Vec<u8>>", "core::ptr::drop_in_place"),
            ("memcpy@plt", "memcpy@plt"),
            ("[0x15b70-0x15bc0]", "[0x15b70-0x15bc0]"),
            ("<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop", "<alloc::vec::Vec as core::ops::drop::Drop>::drop"),
        ];
        for (long, short) in cases {
            assert_eq!(shorten(long), short, "{long}");
        }
    }
}
