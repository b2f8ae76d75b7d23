//! The reader of herd7's C litmus dialect (the kernel's
//! tools/memory-model/litmus-tests and Paul McKenney's collection): the
//! name line, `(* … *)` comments (the first holding `Result:` gives the
//! documented outcome), the init block, `P<n>(…) { … }` threads, and the
//! final clause with its optional `locations` and `filter`.
//!
//! Malformed text is an [`ErrorKind::Malformed`] error at the first place
//! the text stops being a litmus test. A construct the reader recognises
//! but does not run (a loop, an array, a cast, a function outside
//! linux-kernel.def, another dialect) is [`ErrorKind::Unsupported`] at its
//! first occurrence — reported only when the whole file is otherwise well
//! formed, so a deleted brace is never mistaken for an unsupported call.
//! The reader never panics and always advances, so any input ends.

use super::ast::*;

/// Reads one litmus test from `text`.
pub fn parse(text: &str) -> Result<Test, ReadError> {
    let mut lines = text.lines().enumerate();
    let (first_no, first) = loop {
        match lines.next() {
            Some((_, l)) if l.trim().is_empty() => continue,
            Some((n, l)) => break (n, l),
            None => {
                return Err(malformed(
                    Pos { line: 1, col: 1 },
                    "empty file: expected 'C name'",
                ))
            }
        }
    };
    let line = first_no as u32 + 1;
    let trimmed = first.trim_start();
    let col = (first.len() - trimmed.len()) as u32 + 1;
    let mut words = trimmed.split_whitespace();
    let dialect = words.next().unwrap_or("");
    let name: Vec<&str> = words.collect();
    if dialect != "C" {
        let pos = Pos { line, col };
        return Err(if dialect.chars().all(|c| c.is_ascii_alphanumeric()) {
            ReadError {
                pos,
                kind: ErrorKind::Unsupported,
                what: format!("the {dialect} dialect (only herd7's C dialect is read)"),
            }
        } else {
            malformed(pos, "expected 'C name' on the first line")
        });
    }
    if name.is_empty() {
        return Err(malformed(
            Pos { line, col },
            "expected a test name after 'C'",
        ));
    }
    // The rest of the file, starting on the next line.
    let offset: usize = text
        .lines()
        .take(first_no + 1)
        .map(|l| l.len() + 1)
        .sum::<usize>()
        .min(text.len());
    let lexed = lex(&text[offset..], line + 1)?;
    let mut p = Parser {
        toks: lexed.toks,
        i: 0,
        eof: lexed.eof,
        unsupported: None,
        regs: Vec::new(),
        params: Vec::new(),
    };
    let result = lexed.result;
    let mut test = p.test(name.join(" "), result)?;
    if let Some(u) = p.unsupported.take() {
        return Err(u);
    }
    resolve(&mut test)?;
    Ok(test)
}

fn malformed(pos: Pos, what: impl Into<String>) -> ReadError {
    ReadError {
        pos,
        kind: ErrorKind::Malformed,
        what: what.into(),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Int(i64),
    Punct(&'static str),
}

impl Tok {
    fn text(&self) -> String {
        match self {
            Tok::Ident(s) => format!("'{s}'"),
            Tok::Int(n) => format!("'{n}'"),
            Tok::Punct(p) => format!("'{p}'"),
        }
    }
}

struct Lexed {
    toks: Vec<(Tok, Pos)>,
    eof: Pos,
    result: Option<(String, Pos)>,
}

/// Longest first.
const PUNCTS: &[&str] = &[
    "<<=", ">>=", "/\\", "\\/", "->", "++", "--", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>",
    "+=", "-=", "*=", "/=", "|=", "&=", "^=", "%=", "(", ")", "{", "}", "[", "]", ";", ",", ":",
    "=", "*", "&", "|", "^", "!", "~", "+", "-", "/", "%", "<", ">", "?", ".",
];

fn lex(text: &str, first_line: u32) -> Result<Lexed, ReadError> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let mut result = None;
    let (mut line, mut col) = (first_line, 1u32);
    let mut i = 0;
    let mut depth = 0i32;
    let advance = |i: &mut usize, line: &mut u32, col: &mut u32, n: usize| {
        for _ in 0..n {
            if chars.get(*i) == Some(&'\n') {
                *line += 1;
                *col = 1;
            } else {
                *col += 1;
            }
            *i += 1;
        }
    };
    let note_result = |body: &str, start: Pos, result: &mut Option<(String, Pos)>| {
        if result.is_some() {
            return;
        }
        if let Some(at) = body.find("Result:") {
            let word: String = body[at + 7..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let before = &body[..at];
            let line = start.line + before.matches('\n').count() as u32;
            *result = Some((word, Pos { line, col: 1 }));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let pos = Pos { line, col };
        if c.is_whitespace() {
            advance(&mut i, &mut line, &mut col, 1);
            continue;
        }
        let next = chars.get(i + 1).copied();
        // herd's comments, outside thread bodies (where `(*p)` is C).
        if c == '(' && next == Some('*') && depth == 0 {
            let start = i;
            let mut nest = 0;
            loop {
                if i >= chars.len() {
                    return Err(malformed(pos, "unterminated '(*' comment"));
                }
                if chars[i] == '(' && chars.get(i + 1) == Some(&'*') {
                    nest += 1;
                    advance(&mut i, &mut line, &mut col, 2);
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&')') {
                    nest -= 1;
                    advance(&mut i, &mut line, &mut col, 2);
                    if nest == 0 {
                        break;
                    }
                } else {
                    advance(&mut i, &mut line, &mut col, 1);
                }
            }
            let body: String = chars[start..i].iter().collect();
            note_result(&body, pos, &mut result);
            continue;
        }
        if c == '/' && next == Some('*') {
            let start = i;
            advance(&mut i, &mut line, &mut col, 2);
            loop {
                if i >= chars.len() {
                    return Err(malformed(pos, "unterminated '/*' comment"));
                }
                if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    advance(&mut i, &mut line, &mut col, 2);
                    break;
                }
                advance(&mut i, &mut line, &mut col, 1);
            }
            let body: String = chars[start..i].iter().collect();
            note_result(&body, pos, &mut result);
            continue;
        }
        if c == '/' && next == Some('/') {
            let start = i;
            while i < chars.len() && chars[i] != '\n' {
                advance(&mut i, &mut line, &mut col, 1);
            }
            let body: String = chars[start..i].iter().collect();
            note_result(&body, pos, &mut result);
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                advance(&mut i, &mut line, &mut col, 1);
            }
            toks.push((Tok::Ident(chars[start..i].iter().collect()), pos));
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                advance(&mut i, &mut line, &mut col, 1);
            }
            let s: String = chars[start..i].iter().collect();
            let s = s.trim_end_matches(['u', 'U', 'l', 'L']);
            let n = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                i64::from_str_radix(h, 16).ok()
            } else {
                s.parse::<i64>().ok()
            };
            match n {
                Some(n) => toks.push((Tok::Int(n), pos)),
                None => return Err(malformed(pos, format!("bad number '{s}'"))),
            }
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
        match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            Some(p) => {
                match *p {
                    "{" => depth += 1,
                    "}" => depth -= 1,
                    _ => {}
                }
                toks.push((Tok::Punct(p), pos));
                advance(&mut i, &mut line, &mut col, p.len());
            }
            None => return Err(malformed(pos, format!("unexpected character '{c}'"))),
        }
    }
    Ok(Lexed {
        toks,
        eof: Pos { line, col },
        result,
    })
}

/// Words that begin a declaration.
const TYPES: &[&str] = &[
    "int",
    "intptr_t",
    "uintptr_t",
    "long",
    "unsigned",
    "signed",
    "short",
    "char",
    "bool",
    "_Bool",
    "u8",
    "u16",
    "u32",
    "u64",
    "s32",
    "s64",
    "atomic_t",
    "atomic_long_t",
    "spinlock_t",
    "struct",
    "void",
    "const",
    "volatile",
];

/// Words that are C the reader does not run.
const UNSUPPORTED_STATEMENTS: &[&str] = &[
    "while", "for", "do", "goto", "switch", "return", "break", "continue",
];

/// The words of the final clause: seen inside a body, a brace is missing.
const CLAUSE_WORDS: &[&str] = &["exists", "forall", "locations", "filter"];

struct Parser {
    toks: Vec<(Tok, Pos)>,
    i: usize,
    eof: Pos,
    unsupported: Option<ReadError>,
    /// The registers declared so far in the thread being read.
    regs: Vec<String>,
    params: Vec<String>,
}

fn is_thread_name(s: &str) -> Option<usize> {
    let n = s.strip_prefix('P')?;
    if n.is_empty() || !n.chars().all(|c| c.is_ascii_digit()) || n.len() > 3 {
        return None;
    }
    n.parse().ok()
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|(t, _)| t)
    }
    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.i + k).map(|(t, _)| t)
    }
    fn pos(&self) -> Pos {
        self.toks.get(self.i).map_or(self.eof, |(_, p)| *p)
    }
    fn bump(&mut self) -> Option<(Tok, Pos)> {
        let t = self.toks.get(self.i).cloned();
        if t.is_some() {
            self.i += 1;
        }
        t
    }
    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }
    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(q)) if q == s)
    }
    fn eat(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn found(&self) -> String {
        match self.peek() {
            Some(t) => t.text(),
            None => "the end of the file".to_string(),
        }
    }
    fn expect(&mut self, p: &str, context: &str) -> Result<Pos, ReadError> {
        let pos = self.pos();
        if self.eat(p) {
            Ok(pos)
        } else {
            Err(malformed(
                pos,
                format!("expected '{p}' {context}, found {}", self.found()),
            ))
        }
    }
    fn ident(&mut self, context: &str) -> Result<(String, Pos), ReadError> {
        match self.bump() {
            Some((Tok::Ident(s), p)) => Ok((s, p)),
            Some((t, p)) => {
                self.i -= 1;
                Err(malformed(
                    p,
                    format!("expected {context}, found {}", t.text()),
                ))
            }
            None => Err(malformed(
                self.eof,
                format!("expected {context}, found the end of the file"),
            )),
        }
    }
    fn unsupported(&mut self, pos: Pos, what: impl Into<String>) {
        if self.unsupported.is_none() {
            self.unsupported = Some(ReadError {
                pos,
                kind: ErrorKind::Unsupported,
                what: what.into(),
            });
        }
    }

    fn test(&mut self, name: String, result: Option<(String, Pos)>) -> Result<Test, ReadError> {
        let mut test = Test {
            name,
            result,
            locations: Vec::new(),
            reg_init: Vec::new(),
            threads: Vec::new(),
            filter: None,
            quantifier: Quantifier::Exists,
            cond: Cond::True,
            clause: String::new(),
        };
        if !self.is_punct("{") {
            return Err(malformed(
                self.pos(),
                format!("expected the init block '{{', found {}", self.found()),
            ));
        }
        self.init(&mut test)?;
        while let Some(Tok::Ident(s)) = self.peek() {
            let Some(n) = is_thread_name(s) else { break };
            let t = self.thread(n, &mut test)?;
            if t.index != test.threads.len() {
                return Err(malformed(
                    t.pos,
                    format!(
                        "expected thread P{}, found P{}",
                        test.threads.len(),
                        t.index
                    ),
                ));
            }
            test.threads.push(t);
        }
        if test.threads.is_empty() {
            return Err(malformed(
                self.pos(),
                format!("expected thread P0, found {}", self.found()),
            ));
        }
        self.final_clause(&mut test)?;
        Ok(test)
    }

    fn add_location(test: &mut Test, name: &str, kind: LocKind, init: Option<Value>) {
        Self::add_location_ptr(test, name, kind, init, false);
    }

    fn add_location_ptr(
        test: &mut Test,
        name: &str,
        kind: LocKind,
        init: Option<Value>,
        pointer: bool,
    ) {
        let pointer = pointer || matches!(init, Some(Value::Addr(_)));
        match test.locations.iter_mut().find(|l| l.name == name) {
            Some(l) => {
                l.pointer |= pointer;
                if kind != LocKind::Word {
                    l.kind = kind;
                }
                if let Some(v) = init {
                    l.init = v;
                }
            }
            None => test.locations.push(Location {
                name: name.to_string(),
                kind,
                init: init.unwrap_or(Value::Int(0)),
                pointer,
            }),
        }
    }

    /// Type words before a name; the kind of location they declare.
    fn type_words(&mut self) -> Result<Option<LocKind>, ReadError> {
        let mut kind = None;
        while let Some(Tok::Ident(s)) = self.peek() {
            if !TYPES.contains(&s.as_str()) {
                break;
            }
            let s = s.clone();
            self.i += 1;
            kind = Some(match s.as_str() {
                "spinlock_t" => LocKind::SpinLock,
                "struct" => {
                    let (tag, _) = self.ident("a struct tag")?;
                    if tag == "srcu_struct" {
                        LocKind::Srcu
                    } else {
                        LocKind::Word
                    }
                }
                _ => kind.unwrap_or(LocKind::Word),
            });
        }
        Ok(kind)
    }

    fn init(&mut self, test: &mut Test) -> Result<(), ReadError> {
        let open = self.expect("{", "to open the init block")?;
        loop {
            if self.eat("}") {
                return Ok(());
            }
            if self.eat(";") {
                continue;
            }
            if self.peek().is_none() {
                return Err(malformed(open, "the init block '{' is never closed"));
            }
            let kind = self.type_words()?.unwrap_or(LocKind::Word);
            while self.eat("*") {}
            // `n:reg` or a location.
            let (thread, name, pos) = match self.bump() {
                Some((Tok::Int(n), p)) => {
                    self.expect(":", "after a thread number")?;
                    let (r, _) = self.ident("a register name")?;
                    (Some(n as usize), r, p)
                }
                Some((Tok::Ident(s), p)) => {
                    if is_thread_name(&s).is_some() && self.is_punct("(") {
                        return Err(malformed(
                            p,
                            format!("thread {s} begins inside the init block: a '}}' is missing"),
                        ));
                    }
                    (None, s, p)
                }
                Some((t, p)) => {
                    return Err(malformed(
                        p,
                        format!(
                            "expected a location or 'n:reg' in the init block, found {}",
                            t.text()
                        ),
                    ))
                }
                None => return Err(malformed(self.eof, "the init block is never closed")),
            };
            if self.is_punct("[") {
                self.unsupported(pos, format!("the array '{name}'"));
                self.skip_balanced("[", "]");
            }
            let value = if self.eat("=") {
                Some(self.init_value()?)
            } else {
                None
            };
            match thread {
                Some(n) => test
                    .reg_init
                    .push((n, name, value.unwrap_or(Value::Int(0)))),
                None => Self::add_location(test, &name, kind, value),
            }
            if !self.is_punct("}") {
                self.expect(";", "after an init entry")?;
            }
        }
    }

    fn init_value(&mut self) -> Result<Value, ReadError> {
        let pos = self.pos();
        let neg = self.eat("-");
        match self.bump() {
            Some((Tok::Int(n), _)) => Ok(Value::Int(if neg { -n } else { n })),
            Some((Tok::Punct("&"), _)) if !neg => Ok(Value::Addr(self.ident("a location")?.0)),
            Some((Tok::Ident(s), p)) if !neg => {
                if s == "ATOMIC_INIT" {
                    self.expect("(", "after ATOMIC_INIT")?;
                    let v = self.init_value()?;
                    self.expect(")", "to close ATOMIC_INIT")?;
                    Ok(v)
                } else if s == "NULL" {
                    Ok(Value::Int(0))
                } else if self.is_punct("(") {
                    self.unsupported(p, format!("the initialiser '{s}(…)'"));
                    self.skip_balanced("(", ")");
                    Ok(Value::Int(0))
                } else {
                    Ok(Value::Addr(s))
                }
            }
            Some((Tok::Punct("{"), p)) => {
                self.i -= 1;
                self.unsupported(p, "a braced initialiser");
                self.skip_balanced("{", "}");
                Ok(Value::Int(0))
            }
            _ => Err(malformed(pos, "expected an initial value")),
        }
    }

    /// Skips from an opening `open` to its match (or the end).
    fn skip_balanced(&mut self, open: &str, close: &str) {
        let mut depth = 0;
        while let Some((t, _)) = self.bump() {
            if t == Tok::Punct(PUNCTS.iter().find(|p| **p == open).copied().unwrap_or("(")) {
                depth += 1;
            } else if t == Tok::Punct(PUNCTS.iter().find(|p| **p == close).copied().unwrap_or(")"))
            {
                depth -= 1;
                if depth <= 0 {
                    return;
                }
            }
        }
    }

    fn thread(&mut self, index: usize, test: &mut Test) -> Result<Thread, ReadError> {
        let (_, pos) = self.ident("a thread")?;
        self.expect("(", "to open the parameter list")?;
        let mut params = Vec::new();
        if !self.eat(")") {
            loop {
                let kind = self.type_words()?;
                let mut stars = 0;
                while self.eat("*") {
                    stars += 1;
                }
                let (name, p) = self.ident("a parameter name")?;
                if kind.is_none() && !params.is_empty() {
                    // `P0(int *x, y)`: herd needs a type.
                    return Err(malformed(p, format!("parameter '{name}' has no type")));
                }
                Self::add_location_ptr(
                    test,
                    &name,
                    kind.unwrap_or(LocKind::Word),
                    None,
                    stars >= 2,
                );
                params.push(name);
                if self.eat(")") {
                    break;
                }
                self.expect(",", "between parameters")?;
            }
        }
        self.regs.clear();
        self.params = params.clone();
        let open = self.expect("{", "to open the thread's body")?;
        let body = self.block_body(open)?;
        Ok(Thread {
            index,
            params,
            body,
            pos,
        })
    }

    /// Statements up to the `}` closing the block opened at `open`.
    fn block_body(&mut self, open: Pos) -> Result<Vec<Stmt>, ReadError> {
        let mut body = Vec::new();
        loop {
            if self.eat("}") {
                return Ok(body);
            }
            if self.peek().is_none() {
                return Err(malformed(open, "this '{' is never closed"));
            }
            self.stmt(&mut body)?;
        }
    }

    fn stmt(&mut self, out: &mut Vec<Stmt>) -> Result<(), ReadError> {
        let pos = self.pos();
        if self.eat(";") {
            return Ok(());
        }
        if self.eat("{") {
            let inner = self.block_body(pos)?;
            out.extend(inner);
            return Ok(());
        }
        let word = match self.peek() {
            Some(Tok::Ident(s)) => Some(s.clone()),
            _ => None,
        };
        if let Some(w) = word.as_deref() {
            if is_thread_name(w).is_some() && matches!(self.peek_at(1), Some(Tok::Punct("("))) {
                // A call of P1 whose parameters are typed: a new thread.
                if matches!(self.peek_at(2), Some(Tok::Ident(t)) if TYPES.contains(&t.as_str()))
                    || matches!(self.peek_at(2), Some(Tok::Punct(")")))
                {
                    return Err(malformed(
                        pos,
                        format!(
                            "thread {w} begins inside another thread's body: a '}}' is missing"
                        ),
                    ));
                }
            }
            if CLAUSE_WORDS.contains(&w) {
                return Err(malformed(
                    pos,
                    format!("'{w}' inside a thread's body: a '}}' is missing"),
                ));
            }
            if w == "if" {
                self.i += 1;
                self.expect("(", "after 'if'")?;
                let cond = self.expr()?;
                self.expect(")", "to close the 'if' condition")?;
                let mut then = Vec::new();
                self.stmt(&mut then)?;
                let mut els = Vec::new();
                if self.is_ident("else") {
                    self.i += 1;
                    self.stmt(&mut els)?;
                }
                out.push(Stmt::If { cond, then, els });
                return Ok(());
            }
            if w == "else" {
                return Err(malformed(pos, "'else' without 'if'"));
            }
            if UNSUPPORTED_STATEMENTS.contains(&w) {
                self.unsupported(pos, format!("the '{w}' statement"));
                return self.skip_stmt();
            }
            if TYPES.contains(&w) {
                return self.decl(out);
            }
        }
        // `r = e;` declares r if it is new (herd7 takes undeclared
        // registers on the left of '=').
        if let (Some(Tok::Ident(n)), Some(Tok::Punct("="))) = (self.peek(), self.peek_at(1)) {
            if !self.regs.contains(n) && !self.params.contains(n) && !TYPES.contains(&n.as_str()) {
                let n = n.clone();
                self.regs.push(n);
            }
        }
        let e = self.expr()?;
        if self.is_punct("=") {
            self.i += 1;
            let value = self.expr()?;
            let target = match e {
                Expr::Name(n, p) => {
                    if !self.regs.contains(&n) {
                        self.regs.push(n.clone());
                    }
                    Target::Reg(n, p)
                }
                Expr::Deref(inner, _) => Target::Mem(*inner),
                _ => return Err(malformed(pos, "the left side of '=' is not assignable")),
            };
            self.expect(";", "after an assignment")?;
            out.push(Stmt::Assign { target, value });
            return Ok(());
        }
        if let Some(Tok::Punct(p)) = self.peek() {
            if [
                "+=", "-=", "*=", "/=", "|=", "&=", "^=", "%=", "<<=", ">>=", "++", "--",
            ]
            .contains(p)
            {
                let p = *p;
                self.unsupported(self.pos(), format!("the operator '{p}'"));
                return self.skip_stmt();
            }
        }
        self.expect(";", "after a statement")?;
        out.push(Stmt::Expr(e));
        Ok(())
    }

    /// Skips an unsupported statement: to its `;`, or over its block.
    fn skip_stmt(&mut self) -> Result<(), ReadError> {
        let start = self.pos();
        let mut depth = 0i32;
        while let Some((t, _)) = self.bump() {
            match t {
                Tok::Punct("(") | Tok::Punct("[") => depth += 1,
                Tok::Punct(")") | Tok::Punct("]") => depth -= 1,
                Tok::Punct("{") => {
                    let open = self.toks[self.i - 1].1;
                    let mut scratch = Vec::new();
                    self.block_body_into(open, &mut scratch)?;
                    if depth <= 0 {
                        if self.is_ident("while") {
                            continue;
                        }
                        return Ok(());
                    }
                }
                Tok::Punct(";") if depth <= 0 => return Ok(()),
                Tok::Punct("}") => {
                    self.i -= 1;
                    return Ok(());
                }
                _ => {}
            }
        }
        Err(malformed(start, "this statement never ends"))
    }

    fn block_body_into(&mut self, open: Pos, out: &mut Vec<Stmt>) -> Result<(), ReadError> {
        let body = self.block_body(open)?;
        out.extend(body);
        Ok(())
    }

    fn decl(&mut self, out: &mut Vec<Stmt>) -> Result<(), ReadError> {
        self.type_words()?;
        loop {
            while self.eat("*") {}
            let (name, pos) = self.ident("a register name")?;
            if self.is_punct("[") {
                self.unsupported(pos, format!("the array '{name}'"));
                self.skip_balanced("[", "]");
            }
            // In scope in its own initialiser, as in C.
            if !self.regs.contains(&name) {
                self.regs.push(name.clone());
            }
            let init = if self.eat("=") {
                Some(self.expr()?)
            } else {
                None
            };
            out.push(Stmt::Decl { name, init, pos });
            if self.eat(",") {
                continue;
            }
            self.expect(";", "after a declaration")?;
            return Ok(());
        }
    }

    fn expr(&mut self) -> Result<Expr, ReadError> {
        let c = self.binary(0)?;
        if self.eat("?") {
            let a = self.expr()?;
            self.expect(":", "in 'c ? a : b'")?;
            let b = self.expr()?;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }

    fn binary(&mut self, min: u8) -> Result<Expr, ReadError> {
        let mut lhs = self.unary()?;
        while let Some(Tok::Punct(p)) = self.peek() {
            let (prec, op) = match *p {
                "||" => (1, BinOp::LogOr),
                "&&" => (2, BinOp::LogAnd),
                "|" => (3, BinOp::Or),
                "^" => (4, BinOp::Xor),
                "&" => (5, BinOp::And),
                "==" => (6, BinOp::Eq),
                "!=" => (6, BinOp::Ne),
                "<" => (7, BinOp::Lt),
                "<=" => (7, BinOp::Le),
                ">" => (7, BinOp::Gt),
                ">=" => (7, BinOp::Ge),
                "<<" => (8, BinOp::Shl),
                ">>" => (8, BinOp::Shr),
                "+" => (9, BinOp::Add),
                "-" => (9, BinOp::Sub),
                "*" => (10, BinOp::Mul),
                "/" => (10, BinOp::Div),
                "%" => (10, BinOp::Rem),
                _ => break,
            };
            if prec < min {
                break;
            }
            self.i += 1;
            let rhs = self.binary(prec + 1)?;
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, ReadError> {
        let pos = self.pos();
        let e = match self.bump() {
            Some((Tok::Int(n), _)) => Expr::Int(n),
            Some((Tok::Punct("("), p)) => {
                if matches!(self.peek(), Some(Tok::Ident(t)) if TYPES.contains(&t.as_str())) {
                    // A cast changes nothing of a value in this model.
                    let _ = p;
                    self.type_words()?;
                    while self.eat("*") {}
                    self.expect(")", "to close a cast")?;
                    return self.unary();
                }
                let e = self.expr()?;
                self.expect(")", "to close '('")?;
                e
            }
            Some((Tok::Punct("*"), p)) => Expr::Deref(Box::new(self.unary()?), p),
            Some((Tok::Punct("&"), p)) => Expr::AddrOf(Box::new(self.unary()?), p),
            Some((Tok::Punct("!"), _)) => Expr::Un(UnOp::Not, Box::new(self.unary()?)),
            Some((Tok::Punct("~"), _)) => Expr::Un(UnOp::BitNot, Box::new(self.unary()?)),
            Some((Tok::Punct("-"), _)) => Expr::Un(UnOp::Neg, Box::new(self.unary()?)),
            Some((Tok::Punct("+"), _)) => self.unary()?,
            Some((Tok::Ident(s), p)) => {
                if self.is_punct("(") {
                    self.call(s, p)?
                } else if TYPES.contains(&s.as_str()) {
                    return Err(malformed(
                        p,
                        format!("unexpected type '{s}' in an expression"),
                    ));
                } else if CLAUSE_WORDS.contains(&s.as_str()) {
                    return Err(malformed(
                        p,
                        format!("'{s}' inside a thread's body: a '}}' is missing"),
                    ));
                } else if s == "NULL" {
                    Expr::Int(0)
                } else {
                    if !self.regs.contains(&s) && !self.params.contains(&s) {
                        return Err(malformed(
                            p,
                            format!("'{s}' is neither a register nor a parameter of this thread"),
                        ));
                    }
                    Expr::Name(s, p)
                }
            }
            Some((t, p)) => {
                self.i -= 1;
                return Err(malformed(
                    p,
                    format!("expected an expression, found {}", t.text()),
                ));
            }
            None => {
                return Err(malformed(
                    pos,
                    "expected an expression, found the end of the file",
                ))
            }
        };
        match self.peek() {
            Some(Tok::Punct("[")) => {
                self.unsupported(self.pos(), "an array index");
                self.skip_balanced("[", "]");
            }
            Some(Tok::Punct("->")) | Some(Tok::Punct(".")) => {
                self.unsupported(self.pos(), "a struct field");
                self.i += 1;
                self.ident("a field name")?;
            }
            Some(Tok::Punct("++")) | Some(Tok::Punct("--")) => {
                self.unsupported(self.pos(), "'++'/'--'");
                self.i += 1;
            }
            _ => {}
        }
        Ok(e)
    }

    fn call(&mut self, name: String, pos: Pos) -> Result<Expr, ReadError> {
        self.expect("(", "to open the arguments")?;
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                args.push(self.expr()?);
                if self.eat(")") {
                    break;
                }
                self.expect(",", "between arguments")?;
            }
        }
        let Some((func, static_name, arity)) = func_of(&name) else {
            self.unsupported(pos, format!("the function '{name}'"));
            return Ok(Expr::Int(0));
        };
        if args.len() != arity {
            return Err(malformed(
                pos,
                format!("{name} takes {arity} argument(s), found {}", args.len()),
            ));
        }
        Ok(Expr::Call(Call {
            func,
            name: static_name,
            args,
            pos,
        }))
    }

    fn final_clause(&mut self, test: &mut Test) -> Result<(), ReadError> {
        let start = self.i;
        if self.is_ident("locations") {
            self.i += 1;
            let open = self.expect("[", "after 'locations'")?;
            while !self.eat("]") {
                if self.bump().is_none() {
                    return Err(malformed(open, "'locations [' is never closed"));
                }
            }
        }
        if self.is_ident("filter") {
            self.i += 1;
            test.filter = Some(self.cond()?);
        }
        let pos = self.pos();
        // No clause at all (after the last thread, or after `locations`):
        // herd7 reads it as `forall (true)`, a test of whether the threads
        // can finish at all (a self-deadlock has no final state).
        if self.peek().is_none() && test.filter.is_none() {
            test.quantifier = Quantifier::Forall;
            test.cond = Cond::True;
            test.clause = "forall (true)".to_string();
            return Ok(());
        }
        test.quantifier = if self.is_ident("exists") {
            self.i += 1;
            Quantifier::Exists
        } else if self.is_ident("forall") {
            self.i += 1;
            Quantifier::Forall
        } else if self.is_punct("~")
            && matches!(self.peek_at(1), Some(Tok::Ident(s)) if s == "exists")
        {
            self.i += 2;
            Quantifier::NotExists
        } else {
            return Err(malformed(
                pos,
                format!(
                    "expected the final clause (exists, ~exists or forall), found {}",
                    self.found()
                ),
            ));
        };
        test.cond = self.cond()?;
        test.clause = self.toks[start..self.i]
            .iter()
            .map(|(t, _)| match t {
                Tok::Ident(s) => s.clone(),
                Tok::Int(n) => n.to_string(),
                Tok::Punct(p) => p.to_string(),
            })
            .collect::<Vec<_>>()
            .join(" ");
        if self.peek().is_some() {
            return Err(malformed(
                self.pos(),
                format!("unexpected {} after the final clause", self.found()),
            ));
        }
        Ok(())
    }

    fn cond(&mut self) -> Result<Cond, ReadError> {
        let mut lhs = self.conj()?;
        while self.eat("\\/") {
            let rhs = self.conj()?;
            lhs = Cond::Or(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn conj(&mut self) -> Result<Cond, ReadError> {
        let mut lhs = self.cond_unary()?;
        while self.eat("/\\") {
            let rhs = self.cond_unary()?;
            lhs = Cond::And(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn cond_unary(&mut self) -> Result<Cond, ReadError> {
        if self.eat("~") {
            return Ok(Cond::Not(Box::new(self.cond_unary()?)));
        }
        if self.eat("(") {
            let c = self.cond()?;
            self.expect(")", "to close '(' in the final clause")?;
            return Ok(c);
        }
        if self.is_ident("true") {
            self.i += 1;
            return Ok(Cond::True);
        }
        if self.is_ident("false") {
            self.i += 1;
            return Ok(Cond::False);
        }
        let lhs = self.term(true)?;
        let eq = if self.eat("=") || self.eat("==") {
            true
        } else if self.eat("!=") {
            false
        } else {
            return Err(malformed(
                self.pos(),
                format!("expected '=' in the final clause, found {}", self.found()),
            ));
        };
        let rhs = self.term(false)?;
        Ok(Cond::Eq { lhs, rhs, eq })
    }

    /// A term of the clause; an identifier on the left is a location's
    /// value, on the right its address.
    fn term(&mut self, left: bool) -> Result<Term, ReadError> {
        let pos = self.pos();
        let neg = self.eat("-");
        match self.bump() {
            Some((Tok::Int(n), p)) if !neg && self.is_punct(":") => {
                self.i += 1;
                let (r, _) = match self.bump() {
                    Some((Tok::Ident(s), q)) => (s, q),
                    _ => {
                        self.i = self.i.saturating_sub(1);
                        return Err(malformed(self.pos(), "expected a register after 'n:'"));
                    }
                };
                Ok(Term::Reg(n as usize, r, p))
            }
            Some((Tok::Int(n), _)) => Ok(Term::Int(if neg { -n } else { n })),
            Some((Tok::Ident(s), p)) if !neg => {
                if s == "NULL" {
                    Ok(Term::Int(0))
                } else if left {
                    Ok(Term::Loc(s, p))
                } else {
                    Ok(Term::Addr(s, p))
                }
            }
            Some((Tok::Punct("&"), p)) if !neg => Ok(Term::Addr(self.ident("a location")?.0, p)),
            Some((Tok::Punct("*"), p)) if !neg => {
                self.unsupported(p, "a dereference in the final clause");
                self.term(left)
            }
            Some((t, p)) => {
                self.i -= 1;
                Err(malformed(
                    p,
                    format!("expected a register, location or value, found {}", t.text()),
                ))
            }
            None => Err(malformed(
                pos,
                "the final clause is cut short: expected a term, found the end of the file",
            )),
        }
    }
}

/// Checks the clause's registers and locations against the threads.
fn resolve(test: &mut Test) -> Result<(), ReadError> {
    let mut regs_of: Vec<Vec<String>> = Vec::new();
    for t in &test.threads {
        let mut regs = Vec::new();
        collect_regs(&t.body, &mut regs);
        regs_of.push(regs);
    }
    for (n, r, _) in &test.reg_init {
        if *n >= test.threads.len() {
            return Err(malformed(
                Pos { line: 1, col: 1 },
                format!("the init block names P{n}, which the test does not have"),
            ));
        }
        let _ = r;
    }
    fn check(c: &Cond, test: &Test, regs_of: &[Vec<String>]) -> Result<(), ReadError> {
        match c {
            Cond::True | Cond::False => Ok(()),
            Cond::Not(c) => check(c, test, regs_of),
            Cond::And(a, b) | Cond::Or(a, b) => {
                check(a, test, regs_of)?;
                check(b, test, regs_of)
            }
            Cond::Eq { lhs, rhs, .. } => {
                for t in [lhs, rhs] {
                    match t {
                        Term::Reg(n, r, p) => {
                            let Some(regs) = regs_of.get(*n) else {
                                return Err(malformed(
                                    *p,
                                    format!("the clause names P{n}, which the test does not have"),
                                ));
                            };
                            let init = test.reg_init.iter().any(|(m, q, _)| m == n && q == r);
                            if !regs.contains(r) && !init {
                                return Err(malformed(*p, format!("P{n} has no register '{r}'")));
                            }
                        }
                        Term::Loc(l, p) | Term::Addr(l, p) => {
                            if test.location(l).is_none() {
                                return Err(malformed(
                                    *p,
                                    format!("'{l}' is no location of the test"),
                                ));
                            }
                        }
                        Term::Int(_) => {}
                    }
                }
                Ok(())
            }
        }
    }
    // `p=&a` with `a` never named elsewhere: `a` is a location too.
    let targets: Vec<String> = test
        .locations
        .iter()
        .filter_map(|l| match &l.init {
            Value::Addr(a) if test.location(a).is_none() => Some(a.clone()),
            _ => None,
        })
        .collect();
    for a in targets {
        Parser::add_location(test, &a, LocKind::Word, None);
    }
    if let Some(f) = &test.filter {
        check(f, test, &regs_of)?;
    }
    check(&test.cond, test, &regs_of)?;
    Ok(())
}

fn collect_regs(body: &[Stmt], out: &mut Vec<String>) {
    for s in body {
        match s {
            Stmt::Decl { name, .. }
            | Stmt::Assign {
                target: Target::Reg(name, _),
                ..
            } if !out.contains(name) => out.push(name.clone()),
            Stmt::If { then, els, .. } => {
                collect_regs(then, out);
                collect_regs(els, out);
            }
            _ => {}
        }
    }
}

/// The kernel API (linux-kernel.def) by name: what it does, and its arity.
pub fn func_of(name: &str) -> Option<(Func, &'static str, usize)> {
    use Func::*;
    use Order::*;
    let fixed: &[(&str, Func, usize)] = &[
        ("READ_ONCE", Load(Relaxed), 1),
        ("WRITE_ONCE", Store(Relaxed), 2),
        ("smp_load_acquire", Load(Acquire), 1),
        ("smp_store_release", Store(Release), 2),
        ("rcu_dereference", Load(Acquire), 1),
        ("rcu_access_pointer", Load(Relaxed), 1),
        ("rcu_assign_pointer", Store(Release), 2),
        ("atomic_read", Load(Relaxed), 1),
        ("atomic_read_acquire", Load(Acquire), 1),
        ("atomic_set", Store(Relaxed), 2),
        ("atomic_set_release", Store(Release), 2),
        ("smp_mb", SmpMb, 0),
        ("smp_rmb", SmpRmb, 0),
        ("smp_wmb", SmpWmb, 0),
        ("smp_mb__before_atomic", MbAfter, 0),
        ("smp_mb__after_atomic", MbAfter, 0),
        ("smp_mb__after_spinlock", MbAfter, 0),
        ("smp_mb__after_unlock_lock", MbAfter, 0),
        ("smp_mb__after_srcu_read_unlock", MbAfter, 0),
        ("barrier", Barrier, 0),
        ("rcu_read_lock", RcuReadLock, 0),
        ("rcu_read_unlock", RcuReadUnlock, 0),
        ("synchronize_rcu", SynchronizeRcu, 0),
        ("synchronize_rcu_expedited", SynchronizeRcu, 0),
        ("srcu_read_lock", SrcuReadLock, 1),
        ("srcu_read_unlock", SrcuReadUnlock, 2),
        ("synchronize_srcu", SynchronizeSrcu, 1),
        ("spin_lock", SpinLock, 1),
        ("spin_unlock", SpinUnlock, 1),
        ("spin_trylock", SpinTrylock, 1),
        ("spin_is_locked", SpinIsLocked, 1),
        (
            "atomic_add_unless",
            AddUnless {
                inc_not_zero: false,
            },
            3,
        ),
        ("atomic_inc_not_zero", AddUnless { inc_not_zero: true }, 1),
    ];
    if let Some((n, f, a)) = fixed.iter().find(|(n, _, _)| *n == name) {
        return Some((*f, n, *a));
    }
    let (stem, order) = [
        ("_relaxed", Relaxed),
        ("_acquire", Acquire),
        ("_release", Release),
    ]
    .iter()
    .find_map(|(suf, o)| name.strip_suffix(suf).map(|s| (s, *o)))
    .unwrap_or((name, Full));
    let static_name = RMW_NAMES.iter().find(|n| **n == name).copied()?;
    let rmw = |op, ret, implicit: Option<i64>| {
        let order = if ret == Ret::Void { Relaxed } else { order };
        let arity = if implicit.is_some() { 1 } else { 2 };
        Some((
            Rmw {
                op,
                ret,
                order,
                implicit,
            },
            static_name,
            arity,
        ))
    };
    match stem {
        "xchg" | "atomic_xchg" => rmw(RmwOp::Set, Ret::Old, None),
        "cmpxchg" | "atomic_cmpxchg" => Some((Cmpxchg(order), static_name, 3)),
        "atomic_add" => rmw(RmwOp::Add, Ret::Void, None),
        "atomic_sub" => rmw(RmwOp::Sub, Ret::Void, None),
        "atomic_inc" => rmw(RmwOp::Add, Ret::Void, Some(1)),
        "atomic_dec" => rmw(RmwOp::Sub, Ret::Void, Some(1)),
        "atomic_and" => rmw(RmwOp::And, Ret::Void, None),
        "atomic_or" => rmw(RmwOp::Or, Ret::Void, None),
        "atomic_andnot" => rmw(RmwOp::AndNot, Ret::Void, None),
        "atomic_add_return" => rmw(RmwOp::Add, Ret::New, None),
        "atomic_sub_return" => rmw(RmwOp::Sub, Ret::New, None),
        "atomic_inc_return" => rmw(RmwOp::Add, Ret::New, Some(1)),
        "atomic_dec_return" => rmw(RmwOp::Sub, Ret::New, Some(1)),
        "atomic_fetch_add" => rmw(RmwOp::Add, Ret::Old, None),
        "atomic_fetch_sub" => rmw(RmwOp::Sub, Ret::Old, None),
        "atomic_fetch_inc" => rmw(RmwOp::Add, Ret::Old, Some(1)),
        "atomic_fetch_dec" => rmw(RmwOp::Sub, Ret::Old, Some(1)),
        "atomic_fetch_and" => rmw(RmwOp::And, Ret::Old, None),
        "atomic_fetch_or" => rmw(RmwOp::Or, Ret::Old, None),
        "atomic_fetch_andnot" => rmw(RmwOp::AndNot, Ret::Old, None),
        "atomic_inc_and_test" => rmw(RmwOp::Add, Ret::IsZero, Some(1)),
        "atomic_dec_and_test" => rmw(RmwOp::Sub, Ret::IsZero, Some(1)),
        "atomic_sub_and_test" => rmw(RmwOp::Sub, Ret::IsZero, None),
        "atomic_add_negative" => rmw(RmwOp::Add, Ret::IsNeg, None),
        _ => None,
    }
}

/// The RMW names with their ordering suffixes, as static strings for the
/// trace.
static RMW_NAMES: &[&str] = &[
    "xchg",
    "xchg_relaxed",
    "xchg_acquire",
    "xchg_release",
    "atomic_xchg",
    "atomic_xchg_relaxed",
    "atomic_xchg_acquire",
    "atomic_xchg_release",
    "cmpxchg",
    "cmpxchg_relaxed",
    "cmpxchg_acquire",
    "cmpxchg_release",
    "atomic_cmpxchg",
    "atomic_cmpxchg_relaxed",
    "atomic_cmpxchg_acquire",
    "atomic_cmpxchg_release",
    "atomic_add",
    "atomic_sub",
    "atomic_inc",
    "atomic_dec",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_andnot",
    "atomic_add_return",
    "atomic_add_return_relaxed",
    "atomic_add_return_acquire",
    "atomic_add_return_release",
    "atomic_sub_return",
    "atomic_sub_return_relaxed",
    "atomic_sub_return_acquire",
    "atomic_sub_return_release",
    "atomic_inc_return",
    "atomic_inc_return_relaxed",
    "atomic_inc_return_acquire",
    "atomic_inc_return_release",
    "atomic_dec_return",
    "atomic_dec_return_relaxed",
    "atomic_dec_return_acquire",
    "atomic_dec_return_release",
    "atomic_fetch_add",
    "atomic_fetch_add_relaxed",
    "atomic_fetch_add_acquire",
    "atomic_fetch_add_release",
    "atomic_fetch_sub",
    "atomic_fetch_sub_relaxed",
    "atomic_fetch_sub_acquire",
    "atomic_fetch_sub_release",
    "atomic_fetch_inc",
    "atomic_fetch_inc_relaxed",
    "atomic_fetch_inc_acquire",
    "atomic_fetch_inc_release",
    "atomic_fetch_dec",
    "atomic_fetch_dec_relaxed",
    "atomic_fetch_dec_acquire",
    "atomic_fetch_dec_release",
    "atomic_fetch_and",
    "atomic_fetch_and_relaxed",
    "atomic_fetch_and_acquire",
    "atomic_fetch_and_release",
    "atomic_fetch_or",
    "atomic_fetch_or_relaxed",
    "atomic_fetch_or_acquire",
    "atomic_fetch_or_release",
    "atomic_fetch_xor",
    "atomic_fetch_xor_relaxed",
    "atomic_fetch_xor_acquire",
    "atomic_fetch_xor_release",
    "atomic_fetch_andnot",
    "atomic_fetch_andnot_relaxed",
    "atomic_fetch_andnot_acquire",
    "atomic_fetch_andnot_release",
    "atomic_inc_and_test",
    "atomic_dec_and_test",
    "atomic_sub_and_test",
    "atomic_add_negative",
];
