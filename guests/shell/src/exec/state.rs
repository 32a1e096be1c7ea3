//! Variables: scalars, indexed and associative arrays, the export and
//! read-only flags, and the dynamic scopes of `local`.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

/// A variable's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string of bytes.
    Str(Vec<u8>),
    /// An indexed array (dense: unset elements are empty strings).
    Arr(Vec<Vec<u8>>),
    /// An associative array (keys listed in byte order).
    Assoc(BTreeMap<Vec<u8>, Vec<u8>>),
}

impl Value {
    /// The scalar view: a string, or element 0 of an array.
    pub fn scalar(&self) -> Vec<u8> {
        match self {
            Value::Str(s) => s.clone(),
            Value::Arr(a) => a.first().cloned().unwrap_or_default(),
            Value::Assoc(m) => m.get(&b"0"[..]).cloned().unwrap_or_default(),
        }
    }

    /// Bytes held (elements count [`crate::limits::FIELD_OVERHEAD`] each).
    pub fn size(&self) -> usize {
        let o = crate::limits::FIELD_OVERHEAD;
        match self {
            Value::Str(s) => s.len(),
            Value::Arr(a) => a.iter().map(|e| e.len() + o).sum(),
            Value::Assoc(m) => m.iter().map(|(k, v)| k.len() + v.len() + 2 * o).sum(),
        }
    }

    /// Every element (one for a string).
    pub fn elements(&self) -> Vec<Vec<u8>> {
        match self {
            Value::Str(s) => vec![s.clone()],
            Value::Arr(a) => a.clone(),
            Value::Assoc(m) => m.values().cloned().collect(),
        }
    }
}

/// One variable. Its value is shared with the subshells that copied the
/// shell until one of them changes it (copy on write), so a subshell costs
/// one pointer per variable, not a copy of every value.
#[derive(Debug, Clone, Default)]
pub struct Var {
    /// `None`: declared (`export X`, `local x`) but unset.
    pub value: Option<Rc<Value>>,
    /// Passed to programs and listed by `export -p`.
    pub exported: bool,
    /// Refuses assignment and `unset`.
    pub readonly: bool,
}

/// All variables, with the saved values `local` restores. The table is
/// shared with subshells until one changes it.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    map: Rc<HashMap<Vec<u8>, Var>>,
    frames: Vec<Vec<(Vec<u8>, Option<Var>)>>,
}

impl Vars {
    /// The variable `name`, if it exists.
    pub fn get(&self, name: &[u8]) -> Option<&Var> {
        self.map.get(name)
    }

    /// The variable `name` for changing (created unset if missing).
    pub fn entry(&mut self, name: &[u8]) -> &mut Var {
        Rc::make_mut(&mut self.map)
            .entry(name.to_vec())
            .or_default()
    }

    /// The value of `name`, if set.
    pub fn get_value(&self, name: &[u8]) -> Option<&Value> {
        self.map.get(name).and_then(|v| v.value.as_deref())
    }

    /// The value of `name` for changing in place (copied first if a
    /// subshell shares it).
    pub fn value_mut(&mut self, name: &[u8]) -> Option<&mut Value> {
        if self.map.get(name).is_none_or(|v| v.value.is_none()) {
            return None;
        }
        Rc::make_mut(&mut self.map)
            .get_mut(name)
            .and_then(|v| v.value.as_mut())
            .map(Rc::make_mut)
    }

    /// The scalar value of `name`, if set.
    pub fn value(&self, name: &[u8]) -> Option<Vec<u8>> {
        self.get_value(name).map(Value::scalar)
    }

    /// Sets `name` to a string; `Err` if it is read-only.
    pub fn set(&mut self, name: &[u8], value: Vec<u8>) -> Result<(), String> {
        self.set_value(name, Value::Str(value))
    }

    /// Sets `name`'s value; `Err` if it is read-only.
    pub fn set_value(&mut self, name: &[u8], value: Value) -> Result<(), String> {
        let v = self.entry(name);
        if v.readonly {
            return Err(format!(
                "{}: readonly variable",
                String::from_utf8_lossy(name)
            ));
        }
        v.value = Some(Rc::new(value));
        Ok(())
    }

    /// Removes `name`; `Err` if it is read-only.
    pub fn unset(&mut self, name: &[u8]) -> Result<(), String> {
        if let Some(v) = self.map.get(name) {
            if v.readonly {
                return Err(format!(
                    "{}: cannot unset: readonly variable",
                    String::from_utf8_lossy(name)
                ));
            }
            // A local keeps its slot so the function's return restores it.
            let local = self.is_local(name);
            let map = Rc::make_mut(&mut self.map);
            if local {
                if let Some(v) = map.get_mut(name) {
                    v.value = None;
                }
            } else {
                map.remove(name);
            }
        }
        Ok(())
    }

    /// Every variable name with its variable.
    pub fn iter(&self) -> impl Iterator<Item = (&Vec<u8>, &Var)> {
        self.map.iter()
    }

    /// The exported, set variables sorted by name.
    pub fn exported(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = self
            .map
            .iter()
            .filter(|(_, v)| v.exported)
            .filter_map(|(k, v)| v.value.as_deref().map(|x| (k.clone(), x.scalar())))
            .collect();
        out.sort();
        out
    }

    /// Starts a function's scope.
    pub fn push_frame(&mut self) {
        self.frames.push(Vec::new());
    }

    /// Ends a function's scope, restoring what its locals hid.
    pub fn pop_frame(&mut self) {
        if let Some(frame) = self.frames.pop() {
            let map = Rc::make_mut(&mut self.map);
            for (name, old) in frame.into_iter().rev() {
                match old {
                    Some(v) => {
                        map.insert(name, v);
                    }
                    None => {
                        map.remove(&name);
                    }
                }
            }
        }
    }

    /// Makes `name` local to the current function; `false` outside one.
    pub fn make_local(&mut self, name: &[u8]) -> bool {
        let Some(frame) = self.frames.last_mut() else {
            return false;
        };
        if frame.iter().any(|(n, _)| n == name) {
            return true;
        }
        let old = self.map.get(name).cloned();
        frame.push((name.to_vec(), old.clone()));
        // The local starts unset but keeps the export flag.
        let exported = old.map(|v| v.exported).unwrap_or(false);
        Rc::make_mut(&mut self.map).insert(
            name.to_vec(),
            Var {
                value: None,
                exported,
                readonly: false,
            },
        );
        true
    }

    fn is_local(&self, name: &[u8]) -> bool {
        self.frames
            .last()
            .is_some_and(|f| f.iter().any(|(n, _)| n == name))
    }

    /// Whether a function scope is active.
    pub fn in_function(&self) -> bool {
        !self.frames.is_empty()
    }
}
