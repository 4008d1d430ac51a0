//! A parser for the Python literals open-instruct stores as `ground_truth` (`str()` of a list of
//! dicts: single-quoted strings, `None`, `True`, `False`, tuples), into JSON values. It reads
//! data only (what `ast.literal_eval` accepts for these types); nothing is evaluated.

use serde_json::{Map, Number, Value};

/// Parses one Python literal; the whole input must be consumed.
pub fn parse(s: &str) -> Result<Value, String> {
    let mut p = P { s, i: 0, depth: 0 };
    let v = p.value()?;
    p.ws();
    if p.i != s.len() {
        return Err(format!("unexpected text at offset {}", p.i));
    }
    Ok(v)
}

struct P<'a> {
    s: &'a str,
    i: usize,
    depth: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.i += c.len_utf8();
            } else {
                break;
            }
        }
    }

    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        self.ws();
        self.depth += 1;
        if self.depth > 128 {
            return Err("nested too deeply".into());
        }
        let v = match self.peek() {
            Some('[') => {
                self.i += 1;
                Value::Array(self.seq(']')?)
            }
            Some('(') => {
                self.i += 1;
                Value::Array(self.seq(')')?)
            }
            Some('{') => {
                self.i += 1;
                let mut m = Map::new();
                loop {
                    if self.eat('}') {
                        break;
                    }
                    let k = match self.value()? {
                        Value::String(k) => k,
                        other => other.to_string(),
                    };
                    if !self.eat(':') {
                        return Err(format!("expected `:` at offset {}", self.i));
                    }
                    let v = self.value()?;
                    m.insert(k, v);
                    if !self.eat(',') {
                        if self.eat('}') {
                            break;
                        }
                        return Err(format!("expected `,` or `}}` at offset {}", self.i));
                    }
                }
                Value::Object(m)
            }
            Some(c) if c == '\'' || c == '"' => Value::String(self.string(false)?),
            Some(c)
                if matches!(c, 'r' | 'R' | 'u' | 'U')
                    && matches!(self.s[self.i + 1..].chars().next(), Some('\'' | '"')) =>
            {
                self.i += 1;
                Value::String(self.string(matches!(c, 'r' | 'R'))?)
            }
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => self.number()?,
            Some(_) => {
                let rest = &self.s[self.i..];
                let word: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                self.i += word.len();
                match word.as_str() {
                    "None" => Value::Null,
                    "True" => Value::Bool(true),
                    "False" => Value::Bool(false),
                    _ => return Err(format!("unexpected `{}` at offset {}", word, self.i)),
                }
            }
            None => return Err("unexpected end of input".into()),
        };
        self.depth -= 1;
        Ok(v)
    }

    fn seq(&mut self, close: char) -> Result<Vec<Value>, String> {
        let mut out = Vec::new();
        loop {
            if self.eat(close) {
                return Ok(out);
            }
            out.push(self.value()?);
            if !self.eat(',') {
                if self.eat(close) {
                    return Ok(out);
                }
                return Err(format!("expected `,` or `{close}` at offset {}", self.i));
            }
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let rest = &self.s[self.i..];
        let len = rest
            .char_indices()
            .find(|&(j, c)| {
                !(c.is_ascii_digit()
                    || c == '.'
                    || c == '_'
                    || ((c == '-' || c == '+')
                        && (j == 0 || matches!(rest.as_bytes()[j - 1], b'e' | b'E')))
                    || c == 'e'
                    || c == 'E')
            })
            .map_or(rest.len(), |(j, _)| j);
        let text: String = rest[..len].chars().filter(|&c| c != '_').collect();
        self.i += len;
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("bad number `{text}`"))
    }

    fn string(&mut self, raw: bool) -> Result<String, String> {
        let q = self.peek().ok_or("unexpected end of input")?;
        let triple: String = std::iter::repeat_n(q, 3).collect();
        let long = self.s[self.i..].starts_with(&triple);
        self.i += if long { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let rest = &self.s[self.i..];
            let Some(c) = rest.chars().next() else {
                return Err("unterminated string".into());
            };
            if long && rest.starts_with(&triple) {
                self.i += 3;
                return Ok(out);
            }
            if !long && c == q {
                self.i += 1;
                return Ok(out);
            }
            if !long && c == '\n' {
                return Err("newline in a string".into());
            }
            self.i += c.len_utf8();
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.peek() else {
                return Err("unterminated string".into());
            };
            self.i += e.len_utf8();
            if raw {
                out.push('\\');
                out.push(e);
                continue;
            }
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                'a' => out.push('\x07'),
                'b' => out.push('\x08'),
                'f' => out.push('\x0c'),
                'v' => out.push('\x0b'),
                '\n' => {}
                '\\' | '\'' | '"' => out.push(e),
                'x' | 'u' | 'U' => {
                    let n = match e {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex = self.s.get(self.i..self.i + n).ok_or("bad escape")?;
                    let code = u32::from_str_radix(hex, 16).map_err(|_| "bad escape")?;
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    self.i += n;
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn open_instruct_labels() {
        let v = parse("[{'instruction_id': ['punctuation:no_comma', 'detectable_format:title'], 'kwargs': [None, {'num': 3, 'x': True, 'y': -1.5}]}]").unwrap();
        assert_eq!(
            v,
            json!([{"instruction_id": ["punctuation:no_comma", "detectable_format:title"],
                    "kwargs": [null, {"num": 3, "x": true, "y": -1.5}]}])
        );
        assert_eq!(
            parse(r#"("it's", 'a\'b\n', u'é', )"#).unwrap(),
            json!(["it's", "a'b\n", "é"])
        );
        assert_eq!(parse("{'a': 1,}").unwrap(), json!({"a": 1}));
    }

    #[test]
    fn rejects_code() {
        assert!(parse("__import__('os')").is_err());
        assert!(parse("[1, 2").is_err());
        assert!(parse("[1] + [2]").is_err());
        assert!(parse(&"[".repeat(1000)).is_err());
    }
}
