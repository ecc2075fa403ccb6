//! Basic auth against a web config's `basic_auth_users` (bcrypt hashes),
//! as exporter-toolkit does it: every path is protected; a user that is
//! not listed is checked against a hash of the same cost all the same (its
//! answer takes as long as a wrong password's); one bcrypt at a time; an
//! answer, right or wrong, is remembered for the same user and password, so
//! a scrape every 15 s costs one bcrypt, not one each.
//!
//! [`Users::check`] is blocking (a bcrypt of cost 10 takes tens of
//! milliseconds): the server calls it off its event loop.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock};

use base64::Engine;

/// Remembered answers past which the memory starts again (a client trying
/// passwords cannot make it grow without bound).
const MAX_REMEMBERED: usize = 1024;

#[derive(Debug)]
pub(crate) struct Users {
    users: BTreeMap<String, String>,
    /// (user, password) -> allowed.
    remembered: Mutex<HashMap<(String, String), bool>>,
    /// Held while a bcrypt runs.
    bcrypt: Mutex<()>,
    /// The hash an unknown user's password is checked against.
    decoy: OnceLock<String>,
}

/// What an `Authorization` header asks.
pub(crate) enum Asked {
    /// No header, or not `Basic` with base64 of `user:password`.
    Nothing,
    Credentials(String, String),
}

/// Reads `Authorization: Basic BASE64(user:password)`.
pub(crate) fn asked(header: Option<&[u8]>) -> Asked {
    let Some(h) = header.and_then(|h| std::str::from_utf8(h).ok()) else { return Asked::Nothing };
    let Some((scheme, b64)) = h.trim().split_once(' ') else { return Asked::Nothing };
    if !scheme.eq_ignore_ascii_case("basic") {
        return Asked::Nothing;
    }
    let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(b64.trim()) else { return Asked::Nothing };
    let Ok(s) = String::from_utf8(raw) else { return Asked::Nothing };
    match s.split_once(':') {
        Some((u, p)) => Asked::Credentials(u.to_string(), p.to_string()),
        None => Asked::Nothing,
    }
}

impl Users {
    pub(crate) fn new(users: BTreeMap<String, String>) -> Option<Self> {
        (!users.is_empty()).then(|| Users {
            users,
            remembered: Mutex::new(HashMap::new()),
            bcrypt: Mutex::new(()),
            decoy: OnceLock::new(),
        })
    }

    /// Users listed.
    pub(crate) fn count(&self) -> usize {
        self.users.len()
    }

    /// The answer remembered for these credentials, if any (cheap).
    pub(crate) fn remembered(&self, user: &str, password: &str) -> Option<bool> {
        let r = self.remembered.lock().unwrap_or_else(|e| e.into_inner());
        r.get(&(user.to_string(), password.to_string())).copied()
    }

    /// Whether `user` may in with `password`. Blocking: runs bcrypt unless
    /// the answer is remembered.
    pub(crate) fn check(&self, user: &str, password: &str) -> bool {
        if let Some(ok) = self.remembered(user, password) {
            return ok;
        }
        let (hash, known) = match self.users.get(user) {
            Some(h) => (h.as_str(), true),
            None => (self.decoy().as_str(), false),
        };
        let ok = {
            let _one = self.bcrypt.lock().unwrap_or_else(|e| e.into_inner());
            bcrypt::verify(password, hash).unwrap_or(false)
        } && known;
        let mut r = self.remembered.lock().unwrap_or_else(|e| e.into_inner());
        if r.len() >= MAX_REMEMBERED {
            r.clear();
        }
        r.insert((user.to_string(), password.to_string()), ok);
        ok
    }

    /// A hash of the listed users' highest cost, of a password nobody has.
    fn decoy(&self) -> &String {
        self.decoy.get_or_init(|| {
            let cost = self
                .users
                .values()
                .filter_map(|h| h.parse::<bcrypt::HashParts>().ok())
                .map(|p| p.get_cost())
                .max()
                .unwrap_or(bcrypt::DEFAULT_COST);
            bcrypt::hash("dentrylab: no such user", cost).unwrap_or_default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(s: &str) -> Vec<u8> {
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(s)).into_bytes()
    }

    #[test]
    fn only_the_listed_user_with_the_right_password_gets_in() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let u = Users::new(BTreeMap::from([("prom".to_string(), hash)])).unwrap();
        assert!(u.check("prom", "s3cret"));
        assert!(!u.check("prom", "wrong"));
        assert!(!u.check("other", "s3cret"));
        assert_eq!(u.remembered("prom", "s3cret"), Some(true));
        assert_eq!(u.remembered("prom", "wrong"), Some(false));
        assert!(Users::new(BTreeMap::new()).is_none(), "no users: no authentication");
    }

    #[test]
    fn authorization_header_is_read_as_basic_only() {
        assert!(matches!(asked(Some(&basic("a:b:c")[..])), Asked::Credentials(u, p) if u == "a" && p == "b:c"));
        assert!(matches!(asked(None), Asked::Nothing));
        assert!(matches!(asked(Some(&b"Bearer abc"[..])), Asked::Nothing));
        assert!(matches!(asked(Some(&b"Basic !!!"[..])), Asked::Nothing));
        assert!(matches!(asked(Some(&basic("nocolon")[..])), Asked::Nothing));
    }
}
