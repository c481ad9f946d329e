//! PMI-1 `spawn` (what `MPI_Comm_spawn` asks the launcher): the multi-line request and its
//! parts.
//!
//! A spawn of `k` commands travels as `k` blocks, each `mcmd=spawn` on a line of its own,
//! then one `key=value` per line (values are raw: they may hold spaces), then `endcmd`:
//! `nprocs`, `execname`, `totspawns` (`k`), `spawnssofar` (1-based index of this block),
//! `argcnt` and `arg1`..`argN`, `preput_num` and `preput_key_I`/`preput_val_I`, `info_num`
//! and `info_key_I`/`info_val_I` (`I` from 0). The server answers `cmd=spawn_result rc=`
//! once, after the last block, as MPICH's Hydra does.

use crate::wire::{WireError, MAX_KEY, MAX_LINE, MAX_VALUE};

/// Most processes one spawn may ask for (a bound on what a malformed request can cost).
pub const MAX_SPAWN_PROCS: u32 = 4096;
/// Most lines of one block; a block with more is a protocol error.
pub const MAX_BLOCK_LINES: usize = 4096;

/// One command of a spawn: `nprocs` copies of `execname` with `args`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnCommand {
    /// The program, as the caller named it.
    pub execname: String,
    /// How many processes run it.
    pub nprocs: u32,
    /// Its arguments (without `argv[0]`).
    pub args: Vec<String>,
    /// Info keys given for it (`host`, `wdir`, ...).
    pub info: Vec<(String, String)>,
}

impl SpawnCommand {
    /// The value of info key `key`, if given.
    pub fn info(&self, key: &str) -> Option<&str> {
        self.info
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A whole spawn: its commands, whose processes form one new job (ranks in command order,
/// appnum = command index), and the keys put into the new job's key-value space before it
/// starts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpawnRequest {
    /// The commands, in order.
    pub commands: Vec<SpawnCommand>,
    /// Keys readable by the new processes at once (`preput`).
    pub preput: Vec<(String, String)>,
}

impl SpawnRequest {
    /// Processes of all commands.
    pub fn total(&self) -> u32 {
        self.commands.iter().map(|c| c.nprocs).sum()
    }
}

/// One parsed block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The block's command.
    pub command: SpawnCommand,
    /// `totspawns`.
    pub total: usize,
    /// `spawnssofar` (1-based).
    pub index: usize,
    /// Its preput keys.
    pub preput: Vec<(String, String)>,
}

fn check_line(k: &str, v: &str) -> Result<String, WireError> {
    if k.len() > MAX_KEY {
        return Err(WireError::KeyTooLong(k.len()));
    }
    if v.len() > MAX_VALUE {
        return Err(WireError::ValueTooLong(v.len()));
    }
    if v.contains(['\n', '\0']) {
        return Err(WireError::UnencodableValue);
    }
    let line = format!("{k}={v}\n");
    if line.len() > MAX_LINE {
        return Err(WireError::LineTooLong(line.len()));
    }
    Ok(line)
}

/// Encodes command `index` (0-based) of `total` as the block a server reads, with the
/// request's preput keys.
pub fn encode_block(req: &SpawnRequest, index: usize) -> Result<String, WireError> {
    let c = &req.commands[index];
    let mut out = String::from("mcmd=spawn\n");
    let mut add = |k: &str, v: &str| -> Result<(), WireError> {
        out.push_str(&check_line(k, v)?);
        Ok(())
    };
    add("nprocs", &c.nprocs.to_string())?;
    add("execname", &c.execname)?;
    add("totspawns", &req.commands.len().to_string())?;
    add("spawnssofar", &(index + 1).to_string())?;
    add("argcnt", &c.args.len().to_string())?;
    for (i, a) in c.args.iter().enumerate() {
        add(&format!("arg{}", i + 1), a)?;
    }
    add("preput_num", &req.preput.len().to_string())?;
    for (i, (k, v)) in req.preput.iter().enumerate() {
        add(&format!("preput_key_{i}"), k)?;
        add(&format!("preput_val_{i}"), v)?;
    }
    add("info_num", &c.info.len().to_string())?;
    for (i, (k, v)) in c.info.iter().enumerate() {
        add(&format!("info_key_{i}"), k)?;
        add(&format!("info_val_{i}"), v)?;
    }
    out.push_str("endcmd\n");
    Ok(out)
}

/// Parses the lines between `mcmd=spawn` and `endcmd`; the error says what is wrong.
pub fn parse_block(lines: &[String]) -> Result<Block, String> {
    let mut kv: Vec<(&str, &str)> = Vec::with_capacity(lines.len());
    for l in lines {
        let l = l.strip_suffix('\r').unwrap_or(l);
        if l.is_empty() {
            continue;
        }
        let (k, v) = l
            .split_once('=')
            .ok_or_else(|| format!("spawn line {l:?} is not key=value"))?;
        kv.push((k, v));
    }
    let get = |k: &str| kv.iter().find(|(key, _)| *key == k).map(|&(_, v)| v);
    let need = |k: &str| get(k).ok_or_else(|| format!("spawn without {k}"));
    let num = |k: &str| -> Result<usize, String> {
        need(k)?
            .trim()
            .parse::<usize>()
            .map_err(|_| format!("spawn {k}={:?} is not a count", get(k).unwrap_or("")))
    };
    let optnum = |k: &str| -> Result<usize, String> {
        if get(k).is_some() {
            num(k)
        } else {
            Ok(0)
        }
    };
    let nprocs = num("nprocs")?;
    if nprocs == 0 || nprocs > MAX_SPAWN_PROCS as usize {
        return Err(format!(
            "spawn nprocs={nprocs} is outside 1..={MAX_SPAWN_PROCS}"
        ));
    }
    let execname = need("execname")?.to_owned();
    if execname.is_empty() {
        return Err("spawn with an empty execname".into());
    }
    let total = if get("totspawns").is_some() {
        num("totspawns")?
    } else {
        1
    };
    let index = if get("spawnssofar").is_some() {
        num("spawnssofar")?
    } else {
        1
    };
    if total == 0 || index == 0 || index > total {
        return Err(format!("spawn block {index} of {total}"));
    }
    let bounded = |n: usize, what: &str| {
        if n > lines.len() {
            Err(format!(
                "spawn {what}={n} names more entries than were sent"
            ))
        } else {
            Ok(n)
        }
    };
    let argcnt = bounded(optnum("argcnt")?, "argcnt")?;
    let args = (1..=argcnt)
        .map(|i| need(&format!("arg{i}")).map(str::to_owned))
        .collect::<Result<Vec<_>, _>>()?;
    let pairs = |num_key: &str, key: &str, val: &str| -> Result<Vec<(String, String)>, String> {
        let n = bounded(optnum(num_key)?, num_key)?;
        (0..n)
            .map(|i| {
                Ok((
                    need(&format!("{key}{i}"))?.to_owned(),
                    need(&format!("{val}{i}"))?.to_owned(),
                ))
            })
            .collect()
    };
    let preput = pairs("preput_num", "preput_key_", "preput_val_")?;
    let info = pairs("info_num", "info_key_", "info_val_")?;
    Ok(Block {
        command: SpawnCommand {
            execname,
            nprocs: nprocs as u32,
            args,
            info,
        },
        total,
        index,
        preput,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> SpawnRequest {
        SpawnRequest {
            commands: vec![
                SpawnCommand {
                    execname: "./child prog".into(),
                    nprocs: 2,
                    args: vec!["a b".into(), "".into(), "c=d".into()],
                    info: vec![("wdir".into(), "/tmp".into())],
                },
                SpawnCommand {
                    execname: "other".into(),
                    nprocs: 1,
                    args: vec![],
                    info: vec![],
                },
            ],
            preput: vec![("parent".into(), "kvs 1".into())],
        }
    }

    fn lines_of(block: &str) -> Vec<String> {
        let mut l: Vec<String> = block.lines().map(str::to_owned).collect();
        assert_eq!(l.first().map(String::as_str), Some("mcmd=spawn"));
        assert_eq!(l.pop().as_deref(), Some("endcmd"));
        l.remove(0);
        l
    }

    #[test]
    fn blocks_round_trip() {
        let r = req();
        for i in 0..2 {
            let b = parse_block(&lines_of(&encode_block(&r, i).unwrap())).unwrap();
            assert_eq!(b.command, r.commands[i]);
            assert_eq!((b.total, b.index), (2, i + 1));
            assert_eq!(b.preput, r.preput);
        }
        assert_eq!(r.total(), 3);
        assert_eq!(r.commands[0].info("wdir"), Some("/tmp"));
        assert_eq!(r.commands[0].info("host"), None);
    }

    #[test]
    fn bad_blocks_are_refused() {
        let cases: &[&[&str]] = &[
            &["execname=x"],
            &["nprocs=0", "execname=x"],
            &["nprocs=99999", "execname=x"],
            &["nprocs=two", "execname=x"],
            &["nprocs=1"],
            &["nprocs=1", "execname="],
            &["nprocs=1", "execname=x", "argcnt=2", "arg1=a"],
            &["nprocs=1", "execname=x", "argcnt=100000"],
            &["nprocs=1", "execname=x", "totspawns=1", "spawnssofar=2"],
            &["nprocs=1", "execname=x", "info_num=1", "info_key_0=host"],
            &["nprocs=1", "no equals sign"],
        ];
        for c in cases {
            let lines: Vec<String> = c.iter().map(|s| s.to_string()).collect();
            assert!(parse_block(&lines).is_err(), "{c:?} accepted");
        }
    }

    #[test]
    fn unencodable_requests_are_refused() {
        let mut r = req();
        r.commands[0].args.push("new\nline".into());
        assert_eq!(encode_block(&r, 0), Err(WireError::UnencodableValue));
        let mut r = req();
        r.commands[1].execname = "x".repeat(MAX_VALUE + 1);
        assert!(encode_block(&r, 1).is_err());
    }
}
