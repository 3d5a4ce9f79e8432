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
    assert_eq!(t(Like, vec![s("abc"), s("a%")]), "true");
    assert_eq!(t(Like, vec![s("abc"), s("_b_")]), "true");
    assert_eq!(t(Like, vec![s("abc"), s("%c%d")]), "false");
    assert_eq!(t(Like, vec![s("a%c"), s("a\\%c")]), "true");
    assert_eq!(t(Like, vec![s("abc"), s("a\\%c")]), "false");
    assert_eq!(t(Like, vec![s("a_c"), s("a#_c"), s("#")]), "true");
    assert_eq!(t(ILike, vec![s("ABC"), s("a%")]), "true");
    assert_eq!(t(Like, vec![s("ABC"), s("a%")]), "false");
    assert_eq!(t(Like, vec![s("aXbXc"), s("%X%X%")]), "true");
}
