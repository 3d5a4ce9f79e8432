mod common;

use common::*;
use epochlab_common::DataType;
use epochlab_common::expr_node::ExprType::*;

fn s(v: &str) -> epochlab_common::expr_node::ExprNode {
    str_(v)
}

#[test]
fn concatenation() {
    assert_eq!(t(ConcatOp, vec![s("ab"), s("cd")]), "abcd");
    assert_eq!(t(ConcatOp, vec![s("ab"), null(DataType::Varchar)]), "NULL");
    assert_eq!(t(ConcatOp, vec![s("n="), i32_(3)]), "n=3");
    assert_eq!(
        t(Concat, vec![s("a"), null(DataType::Varchar), i32_(1)]),
        "a1"
    );
    assert_eq!(
        t(
            ConcatWs,
            vec![s(","), s("a"), null(DataType::Varchar), s("b")]
        ),
        "a,b"
    );
    assert_eq!(t(ConcatWs, vec![null(DataType::Varchar), s("a")]), "NULL");
}

#[test]
fn case_length_substr() {
    assert_eq!(t(Upper, vec![s("abc")]), "ABC");
    assert_eq!(t(Lower, vec![s("ÀB")]), "àb");
    assert_eq!(t(Length, vec![s("héllo")]), "5");
    assert_eq!(t(OctetLength, vec![s("héllo")]), "6");
    assert_eq!(t(Substr, vec![s("alphabet"), i32_(3)]), "phabet");
    assert_eq!(t(Substr, vec![s("alphabet"), i32_(3), i32_(2)]), "ph");
    assert_eq!(t(Substr, vec![s("alphabet"), i32_(0), i32_(3)]), "al");
    assert_eq!(t(Substr, vec![s("alphabet"), i32_(-5), i32_(3)]), "");
    assert_eq!(
        err(Substr, vec![s("a"), i32_(1), i32_(-1)]),
        "Invalid parameter length: negative substring length not allowed"
    );
}

#[test]
fn trim_replace_position_split() {
    assert_eq!(t(Trim, vec![s("  a b  ")]), "a b");
    assert_eq!(t(Ltrim, vec![s("xxaxx"), s("x")]), "axx");
    assert_eq!(t(Rtrim, vec![s("xxaxx"), s("x")]), "xxa");
    assert_eq!(t(Replace, vec![s("abcabc"), s("b"), s("XY")]), "aXYcaXYc");
    assert_eq!(t(Position, vec![s("héllo"), s("llo")]), "3");
    assert_eq!(t(Position, vec![s("hello"), s("z")]), "0");
    assert_eq!(t(SplitPart, vec![s("a,b,c"), s(","), i32_(2)]), "b");
    assert_eq!(t(SplitPart, vec![s("a,b,c"), s(","), i32_(-1)]), "c");
    assert_eq!(t(SplitPart, vec![s("a,b,c"), s(","), i32_(4)]), "");
}

#[test]
fn left_right_pad_repeat_reverse() {
    assert_eq!(t(Left, vec![s("abcde"), i32_(2)]), "ab");
    assert_eq!(t(Left, vec![s("abcde"), i32_(-2)]), "abc");
    assert_eq!(t(Right, vec![s("abcde"), i32_(2)]), "de");
    assert_eq!(t(Right, vec![s("abcde"), i32_(-2)]), "cde");
    assert_eq!(t(Lpad, vec![s("hi"), i32_(5), s("xy")]), "xyxhi");
    assert_eq!(t(Rpad, vec![s("hi"), i32_(5)]), "hi   ");
    assert_eq!(t(Lpad, vec![s("hello"), i32_(2)]), "he");
    assert_eq!(t(Repeat, vec![s("ab"), i32_(3)]), "ababab");
    assert_eq!(t(Reverse, vec![s("abc")]), "cba");
    assert_eq!(t(Initcap, vec![s("hi THOMAS-x")]), "Hi Thomas-X");
}

#[test]
fn like_with_wildcards_and_escapes() {
    assert_eq!(t(Like, vec![s("abc"), s("a%")]), "t");
    assert_eq!(t(Like, vec![s("abc"), s("_b_")]), "t");
    assert_eq!(t(Like, vec![s("abc"), s("%c%d")]), "f");
    assert_eq!(t(Like, vec![s("a%c"), s("a\\%c")]), "t");
    assert_eq!(t(Like, vec![s("abc"), s("a\\%c")]), "f");
    assert_eq!(t(Like, vec![s("a_c"), s("a#_c"), s("#")]), "t");
    assert_eq!(t(ILike, vec![s("ABC"), s("a%")]), "t");
    assert_eq!(t(Like, vec![s("ABC"), s("a%")]), "f");
    assert_eq!(t(Like, vec![s("aXbXc"), s("%X%X%")]), "t");
}

#[test]
fn regexp_and_md5() {
    assert_eq!(
        t(RegexpMatch, vec![s("foobarbequebaz"), s("(bar)(beque)")]),
        "{bar,beque}"
    );
    assert_eq!(
        t(RegexpMatch, vec![s("foobarbequebaz"), s("barbeque")]),
        "{barbeque}"
    );
    assert_eq!(t(RegexpMatch, vec![s("abc"), s("x")]), "NULL");
    let url = "https://example.com/?channel_id=12&x=1";
    assert_eq!(
        t(RegexpMatch, vec![s(url), s("(&|^|\\?)channel_id=([^&]*)")]),
        "{?,12}"
    );
    assert_eq!(
        t(RegexpReplace, vec![s("foobarbaz"), s("b(..)"), s("X\\1Y")]),
        "fooXarYbaz"
    );
    assert_eq!(
        t(
            RegexpReplace,
            vec![s("foobarbaz"), s("b(..)"), s("X\\1Y"), s("g")]
        ),
        "fooXarYXazY"
    );
    assert_eq!(t(RegexpCount, vec![s("ABCABCAXYaxy"), s("A.")]), "3");
    assert_eq!(t(Md5, vec![s("abc")]), "900150983cd24fb0d6963f7d28e17f72");
}

#[test]
fn concat_prints_booleans_as_output_text_and_concat_op_spells_them() {
    assert_eq!(t(Concat, vec![s("a"), bool_(true)]), "at");
    assert_eq!(t(ConcatOp, vec![s("a"), bool_(true)]), "atrue");
}

#[test]
fn jsonb_access() {
    let j = || {
        lit(
            r#"{"a": [1, "x", null], "b": {"c": true}}"#,
            DataType::Jsonb,
        )
    };
    let a = || call(JsonbAccess, vec![j(), s("a")]);
    assert_eq!(text(&run(&a()).unwrap()), r#"[1, "x", null]"#);
    assert_eq!(t(JsonbAccessStr, vec![a(), i32_(1)]), "x");
    assert_eq!(t(JsonbAccessStr, vec![a(), i32_(-3)]), "1");
    assert_eq!(t(JsonbAccessStr, vec![a(), i32_(2)]), "NULL");
    assert_eq!(t(JsonbAccess, vec![j(), s("zz")]), "NULL");
    assert_eq!(
        t(JsonbTypeof, vec![call(JsonbAccess, vec![j(), s("b")])]),
        "object"
    );
    assert_eq!(t(JsonbArrayLength, vec![a()]), "3");
    assert_eq!(t(Length, vec![lit("\\x0102", DataType::Bytea)]), "2");
}

/// RisingWave's own LIKE cases (expr/core/src/scalar/like.rs).
#[test]
fn like_cases_from_risingwave() {
    let cases: &[(&str, &str, bool, bool)] = &[
        ("ABCDE", "%abcde%", false, false),
        ("Like, expression", "Like, expression", false, true),
        ("Like, expression", "Like, %", false, true),
        ("Like, expression", "%, expression", false, true),
        ("like", "li%ke", false, true),
        ("like", "l%ik%e", false, true),
        ("like", "%like%", false, true),
        ("like", "l%i%k%e%", false, true),
        ("like", "_%_e", false, true),
        ("like", "l%__", false, true),
        ("like", "_%_%_%_", false, true),
        ("abctest", "__test", false, false),
        ("abctest", "%_test", false, true),
        ("aaaaabbb", "a%a%a%a%a%a%b", false, false),
        ("blush thistle blue yellow saddle", "%yellow%", false, true),
        ("ABC_123", "ABC_123", false, true),
        ("ABCD123", "ABC_123", false, true),
        ("ABC_123", r"ABC\_123", false, true),
        ("ABCD123", r"ABC\_123", false, false),
        (r"ABC\123", "ABC_123", false, true),
        (r"ABC\123", r"ABC\\123", false, true),
        (r"ABC\123", r"ABC\123", false, false),
        ("apple", "App%", true, true),
        ("banana", "B%nana", true, true),
        ("apple", "B%nana", true, false),
        ("grape", "Gr_P_", true, true),
    ];
    for (target, pattern, insensitive, expected) in cases {
        let f = if *insensitive { ILike } else { Like };
        let want = if *expected { "t" } else { "f" };
        assert_eq!(
            t(f, vec![s(target), s(pattern)]),
            want,
            "{target} {f:?} {pattern}"
        );
    }
}

#[test]
fn format_specifiers() {
    assert_eq!(
        t(Format, vec![s("Hello %s, %s"), s("World"), i32_(1)]),
        "Hello World, 1"
    );
    assert_eq!(
        t(Format, vec![s("%I.%L %%"), s("My Table"), s("it's")]),
        "\"My Table\".'it''s' %"
    );
    assert_eq!(
        t(
            Format,
            vec![
                s("[%s] [%L]"),
                null(DataType::Varchar),
                null(DataType::Varchar)
            ]
        ),
        "[] [NULL]"
    );
    assert_eq!(
        err(Format, vec![s("%s %s"), s("a")]),
        "too few arguments for format()"
    );
}
