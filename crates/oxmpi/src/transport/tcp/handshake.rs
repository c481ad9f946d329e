//! Proving a connection belongs to the job, and choosing between two simultaneous ones.
//!
//! The connecting rank speaks first: a [`Hello`] with the acceptor's secret token (published
//! only in the acceptor's business card, which only the job's ranks, and the jobs it spawned
//! or was spawned by, can read), its own identity (job id and rank in that job), the identity
//! it wants and the rail. The acceptor sends nothing at all before a valid hello, so a
//! stranger learns nothing; then it answers one byte, [`ACCEPT`] or [`REJECT`].
//!
//! Processes of one job name each other by world rank; a process of another job (connected by
//! `MPI_Comm_spawn`) is known by its job id and rank there, which both sides learned when the
//! jobs exchanged their cards.
//!
//! Two ranks may connect the same rail to each other at once. The rule is that the connection
//! made by the lower identity (job id, then rank) wins ([`resolve`]): each side decides alone
//! and both agree.

/// Bytes of a hello.
pub const HELLO_LEN: usize = 56;
/// The acceptor keeps the connection.
pub const ACCEPT: u8 = 1;
/// The acceptor refuses it: its own connection for this rail wins.
pub const REJECT: u8 = 0;
const MAGIC: [u8; 8] = *b"OXMPItcp";
const VERSION: u32 = 2;

/// Bytes of a secret token.
pub const TOKEN_LEN: usize = 16;

/// The first message on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// The acceptor's secret.
    pub token: [u8; TOKEN_LEN],
    /// Rank of the connecting side in its job.
    pub from: u32,
    /// Rank the connecting side wants, in the acceptor's job.
    pub to: u32,
    /// Rail index.
    pub rail: u32,
    /// Job id of the connecting side.
    pub from_job: u64,
    /// Job id the connecting side wants.
    pub to_job: u64,
}

impl Hello {
    /// The hello as sent.
    pub fn encode(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..24].copy_from_slice(&self.token);
        b[24..28].copy_from_slice(&self.from.to_le_bytes());
        b[28..32].copy_from_slice(&self.to.to_le_bytes());
        b[32..36].copy_from_slice(&self.rail.to_le_bytes());
        b[36..40].copy_from_slice(&VERSION.to_le_bytes());
        b[40..48].copy_from_slice(&self.from_job.to_le_bytes());
        b[48..56].copy_from_slice(&self.to_job.to_le_bytes());
        b
    }

    /// Checks a received hello against what this acceptor expects: its token, its identity
    /// (rank `me` of job `job`), a rank of the job (`size` ranks) or of another job, a rail it
    /// has. Whether another job's process is known is the caller's to check. The error
    /// describes the stranger for the log.
    pub fn check(
        b: &[u8; HELLO_LEN],
        token: &[u8; TOKEN_LEN],
        (job, me): (u64, u32),
        size: u32,
        rails: u32,
    ) -> Result<Hello, &'static str> {
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let long = |i: usize| u64::from(word(i)) | (u64::from(word(i + 4)) << 32);
        if b[..8] != MAGIC {
            return Err("not an oxmpi connection");
        }
        if word(36) != VERSION {
            return Err("another version of the oxmpi TCP protocol");
        }
        // Every byte compared, so timing does not tell how much of a guess was right.
        let diff = b[8..24]
            .iter()
            .zip(token)
            .fold(0u8, |d, (x, y)| d | (x ^ y));
        if diff != 0 {
            return Err("wrong job secret");
        }
        let h = Hello {
            token: *token,
            from: word(24),
            to: word(28),
            rail: word(32),
            from_job: long(40),
            to_job: long(48),
        };
        let same_job = h.from_job == job;
        if h.to_job != job
            || h.to != me
            || (same_job && (h.from >= size || h.from == me))
            || h.rail >= rails
        {
            return Err("names a rank or rail this rank does not serve");
        }
        Ok(h)
    }
}

/// What the acceptor of a valid hello already has for that peer's rail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ours {
    /// Nothing: no connection yet.
    Nothing,
    /// Our own connection, waiting for the peer's answer.
    Connecting,
    /// The peer refused our connection: its own is on the way.
    Refused,
    /// A working connection.
    Up,
    /// Our connection failed or died: we do not reopen it, but the peer may.
    Dead,
}

/// Whether to keep a valid incoming connection from the process `from` (job id, rank) for a
/// rail on which we have `ours`: the connection made by the lower identity wins (within a
/// job, the lower rank); a rail that died on our side is taken back if the peer reaches us
/// (our own connect may have failed where its works).
pub fn resolve(me: (u64, u32), from: (u64, u32), ours: Ours) -> bool {
    match ours {
        Ours::Nothing | Ours::Refused | Ours::Dead => true,
        Ours::Connecting => from < me,
        Ours::Up => false,
    }
}

/// The token as hexadecimal text, for the business card.
pub fn token_hex(t: &[u8; TOKEN_LEN]) -> String {
    t.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses [`token_hex`]'s text.
pub fn parse_token(s: &str) -> Option<[u8; TOKEN_LEN]> {
    if s.len() != 2 * TOKEN_LEN || !s.is_ascii() {
        return None;
    }
    let mut t = [0u8; TOKEN_LEN];
    for (i, b) in t.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: [u8; TOKEN_LEN] = [7; TOKEN_LEN];

    #[test]
    fn a_valid_hello_passes_and_every_bad_one_is_refused() {
        const J: u64 = 0x1234_5678_9abc_def0;
        let h = Hello {
            token: T,
            from: 2,
            to: 1,
            rail: 1,
            from_job: J,
            to_job: J,
        };
        let me = (J, 1);
        assert_eq!(Hello::check(&h.encode(), &T, me, 4, 2), Ok(h));
        // Another job's process may name any rank of its own job.
        let foreign = Hello {
            from: 9,
            from_job: 7,
            ..h
        };
        assert_eq!(Hello::check(&foreign.encode(), &T, me, 4, 2), Ok(foreign));
        let same_rank_elsewhere = Hello {
            from: 1,
            from_job: 7,
            ..h
        };
        assert!(Hello::check(&same_rank_elsewhere.encode(), &T, me, 4, 2).is_ok());
        let mut wrong = T;
        wrong[15] ^= 1;
        assert_eq!(
            Hello::check(&Hello { token: wrong, ..h }.encode(), &T, me, 4, 2),
            Err("wrong job secret")
        );
        assert!(Hello::check(&[0x41; HELLO_LEN], &T, me, 4, 2).is_err());
        for bad in [
            Hello { to: 3, ..h },
            Hello { from: 9, ..h },
            Hello { from: 1, ..h },
            Hello { rail: 2, ..h },
            Hello { to_job: 7, ..h },
        ] {
            assert!(
                Hello::check(&bad.encode(), &T, me, 4, 2).is_err(),
                "{bad:?}"
            );
        }
        let mut v = h.encode();
        v[36] = 3;
        assert!(Hello::check(&v, &T, me, 4, 2)
            .unwrap_err()
            .contains("version"));
    }

    #[test]
    fn simultaneous_connects_keep_exactly_the_lower_ranks_connection() {
        for (a, b) in [((0, 0), (0, 1)), ((5, 3), (5, 9)), ((1, 9), (2, 0))] {
            // Both connected: each receives the other's hello while its own is in flight.
            let a_keeps_bs = resolve(a, b, Ours::Connecting);
            let b_keeps_as = resolve(b, a, Ours::Connecting);
            assert!(
                !a_keeps_bs && b_keeps_as,
                "only {a:?}'s connection survives"
            );
        }
        assert!(resolve((0, 5), (0, 9), Ours::Nothing));
        assert!(resolve((0, 5), (0, 9), Ours::Refused));
        assert!(!resolve((0, 5), (0, 1), Ours::Up));
        assert!(resolve((0, 5), (0, 1), Ours::Dead));
    }

    #[test]
    fn tokens_round_trip_through_text() {
        let t: [u8; TOKEN_LEN] = core::array::from_fn(|i| (i * 37) as u8);
        assert_eq!(parse_token(&token_hex(&t)), Some(t));
        assert_eq!(parse_token("zz"), None);
        assert_eq!(parse_token(&"g".repeat(32)), None);
    }
}
