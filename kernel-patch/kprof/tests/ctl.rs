//! The `sys:prof_ctl` grammar: `start <pid> [capacity] [exec] [children] [rate=HZ] [stacks=N]`
//! | `start all [rate=HZ] [stacks=N]` | `stop`.

use kprof::{
    Command, CountFrom, DEFAULT_CAPACITY, DEFAULT_STACKS, MAX_CAPACITY, MAX_RATE, MAX_STACKS, MIN_RATE, ParseError,
    parse_command,
};

fn start(pid: usize, capacity: usize) -> Result<Command, ParseError> {
    Ok(Command::Start {
        pid,
        capacity,
        from: CountFrom::Now,
        children: false,
        rate: None,
        stacks: DEFAULT_STACKS,
    })
}

fn start_at_exec(pid: usize, capacity: usize) -> Result<Command, ParseError> {
    Ok(Command::Start {
        pid,
        capacity,
        from: CountFrom::Exec,
        children: false,
        rate: None,
        stacks: DEFAULT_STACKS,
    })
}

fn start_with(pid: usize, capacity: usize, from: CountFrom, rate: usize) -> Result<Command, ParseError> {
    Ok(Command::Start {
        pid,
        capacity,
        from,
        children: false,
        rate: Some(rate),
        stacks: DEFAULT_STACKS,
    })
}

#[test]
fn rate_asks_for_an_nmi_source() {
    assert_eq!(parse_command(b"start 12 rate=1000"), start_with(12, DEFAULT_CAPACITY, CountFrom::Now, 1000));
    assert_eq!(parse_command(b"start 12 64 rate=4000 exec\n"), start_with(12, 64, CountFrom::Exec, 4000));
    assert_eq!(parse_command(b"start 12 64 exec rate=0x64"), start_with(12, 64, CountFrom::Exec, 100));
    assert_eq!(parse_command(b"start 12 exec rate=10000"), start_with(12, DEFAULT_CAPACITY, CountFrom::Exec, MAX_RATE));
    assert_eq!(parse_command(b"start 1 rate=100"), start_with(1, DEFAULT_CAPACITY, CountFrom::Now, MIN_RATE));
}

#[test]
fn stacks_sizes_the_stack_table() {
    let with = |stacks, rate, from| {
        Ok(Command::Start { pid: 12, capacity: DEFAULT_CAPACITY, from, children: false, rate, stacks })
    };
    assert_eq!(parse_command(b"start 12 stacks=0"), with(0, None, CountFrom::Now));
    assert_eq!(parse_command(b"start 12 stacks=262144"), with(MAX_STACKS, None, CountFrom::Now));
    assert_eq!(
        parse_command(b"start 12 8192 stacks=0x40000 exec rate=4000"),
        Ok(Command::Start { pid: 12, capacity: 8192, from: CountFrom::Exec, children: false, rate: Some(4000), stacks: MAX_STACKS })
    );
    assert_eq!(parse_command(b"start 12 rate=4000 stacks=256000\n"), with(256_000, Some(4000), CountFrom::Now));
}

#[test]
fn good_commands() {
    assert_eq!(parse_command(b"stop"), Ok(Command::Stop));
    assert_eq!(parse_command(b"  stop\n"), Ok(Command::Stop));
    assert_eq!(parse_command(b"start 12"), start(12, DEFAULT_CAPACITY));
    assert_eq!(parse_command(b"start 12 100\n"), start(12, 100));
    assert_eq!(parse_command(b"start\t0x1f  0X400"), start(31, 1024));
    assert_eq!(
        parse_command(b"start 0xABcd"),
        start(0xabcd, DEFAULT_CAPACITY)
    );
    assert_eq!(parse_command(b"start 5 1048576"), start(5, MAX_CAPACITY));
    assert_eq!(parse_command(b"start 007 1"), start(7, 1));
}

/// `start all`: every process (pid 0), with a rate and a stack table, never from an exec nor
/// with an exact-PC table of its own.
#[test]
fn all_is_every_process() {
    let all = |rate: Option<usize>, stacks: usize| {
        Ok(Command::Start { pid: 0, capacity: DEFAULT_CAPACITY, from: CountFrom::Now, children: false, rate, stacks })
    };
    assert_eq!(parse_command(b"start all"), all(None, DEFAULT_STACKS));
    assert_eq!(parse_command(b"start all rate=1000 stacks=0x10000\n"), all(Some(1000), 0x10000));
    assert_eq!(parse_command(b"start all stacks=0"), all(None, 0));
    assert_eq!(parse_command(b"start all exec"), Err(ParseError::TrailingWords));
    assert_eq!(parse_command(b"start all children"), Err(ParseError::TrailingWords));
    assert_eq!(parse_command(b"start all 64"), Err(ParseError::TrailingWords));
    assert_eq!(parse_command(b"start all rate=1"), Err(ParseError::BadRate));
    assert_eq!(parse_command(b"start ALL"), Err(ParseError::BadNumber));
    assert_eq!(parse_command(b"start 0"), Err(ParseError::ZeroPid));
}

/// `children`: the session follows the processes the pid starts; once, in any order after the
/// capacity, never on all.
#[test]
fn children_follows_the_process_tree() {
    let tree = |capacity, from| {
        Ok(Command::Start { pid: 12, capacity, from, children: true, rate: None, stacks: DEFAULT_STACKS })
    };
    assert_eq!(parse_command(b"start 12 children"), tree(DEFAULT_CAPACITY, CountFrom::Now));
    assert_eq!(parse_command(b"start 12 64 children exec\n"), tree(64, CountFrom::Exec));
    assert_eq!(parse_command(b"start 12 exec children"), tree(DEFAULT_CAPACITY, CountFrom::Exec));
    assert_eq!(
        parse_command(b"start 12 children rate=1000 stacks=0 exec"),
        Ok(Command::Start { pid: 12, capacity: DEFAULT_CAPACITY, from: CountFrom::Exec, children: true, rate: Some(1000), stacks: 0 })
    );
    assert_eq!(parse_command(b"start 12 children children"), Err(ParseError::TrailingWords));
    assert_eq!(parse_command(b"start 12 child"), Err(ParseError::BadNumber));
}

#[test]
fn exec_counts_from_the_next_exec() {
    assert_eq!(
        parse_command(b"start 12 exec"),
        start_at_exec(12, DEFAULT_CAPACITY)
    );
    assert_eq!(
        parse_command(b"start 12 16384 exec\n"),
        start_at_exec(12, 16384)
    );
    assert_eq!(
        parse_command(b"start 0x1f 0x400\texec"),
        start_at_exec(31, 1024)
    );
}

#[test]
fn bad_commands() {
    use ParseError::*;
    let cases: &[(&[u8], ParseError)] = &[
        (b"", Empty),
        (b" \n\t", Empty),
        (b"go", UnknownCommand),
        (b"STOP", UnknownCommand),
        (b"\xff\xfe", UnknownCommand),
        (b"start", MissingPid),
        (b"start \n", MissingPid),
        (b"start x", BadNumber),
        (b"start -1", BadNumber),
        (b"start +1", BadNumber),
        (b"start 0x", BadNumber),
        (b"start 0xg1", BadNumber),
        (b"start 12abc", BadNumber),
        (b"start 1.5", BadNumber),
        (b"start 99999999999999999999999", BadNumber),
        (b"start 0x1ffffffffffffffff", BadNumber),
        (b"start 0", ZeroPid),
        (b"start 0x0", ZeroPid),
        (b"start 3 0", BadCapacity),
        (b"start 3 1048577", BadCapacity),
        (b"start 3 abc", BadNumber),
        (b"start 3 4 5", TrailingWords),
        (b"start 3 exec 4", TrailingWords),
        (b"start 3 4 exec exec", TrailingWords),
        (b"start 3 4 EXEC", TrailingWords),
        (b"start 3 execute", BadNumber),
        (b"start exec", BadNumber),
        (b"start 3 0 exec", BadCapacity),
        (b"stop now", TrailingWords),
        (b"start 3 rate=99", BadRate),
        (b"start 3 rate=10001", BadRate),
        (b"start 3 rate=0", BadRate),
        (b"start 3 rate=", BadRate),
        (b"start 3 rate=1k", BadRate),
        (b"start 3 16 rate=1000 rate=1000", TrailingWords),
        (b"start 3 rate=1000 exec exec", TrailingWords),
        (b"start 3 rate=1000 4", TrailingWords),
        (b"start 3 RATE=1000", BadNumber),
        (b"stop rate=1000", TrailingWords),
        (b"start 3 stacks=262145", BadStacks),
        (b"start 3 stacks=", BadStacks),
        (b"start 3 stacks=-1", BadStacks),
        (b"start 3 stacks=1 stacks=1", TrailingWords),
        (b"start 3 stacks=4 5", TrailingWords),
        (b"stop stacks=4", TrailingWords),
    ];
    for (input, error) in cases {
        assert_eq!(
            parse_command(input),
            Err(*error),
            "{:?}",
            String::from_utf8_lossy(input)
        );
        assert!(!error.to_string().is_empty());
    }
}
