mod common;

use common::*;
use epochlab_common::DataType;
use epochlab_common::expr_node::ExprType::*;
use epochlab_common::types::StructType;

fn int_list() -> DataType {
    DataType::List(Box::new(DataType::Int32))
}

#[test]
fn array_constructors_casts_and_access() {
    // array[]::int[], as the corpus inserts it
    let empty = cast_to(call(Array, vec![]), int_list());
    assert_eq!(empty.return_type(), int_list());
    assert_eq!(text(&run(&empty).unwrap()), "{}");
    let a = || call(Array, vec![i32_(3), i64_(2), null(DataType::Int32)]);
    assert_eq!(a().return_type(), DataType::List(Box::new(DataType::Int64)));
    assert_eq!(text(&run(&a()).unwrap()), "{3,2,NULL}");
    assert_eq!(t(ArrayAccess, vec![a(), i32_(1)]), "3");
    assert_eq!(t(ArrayAccess, vec![a(), i32_(4)]), "NULL");
    assert_eq!(t(ArrayLength, vec![a()]), "3");
    assert_eq!(t(Cardinality, vec![a()]), "3");
    // concat('event_', array_join(array[uid, item_id], '_'))
    let joined = call(
        ArrayToString,
        vec![call(Array, vec![i32_(1), i32_(22)]), str_("_")],
    );
    assert_eq!(t(Concat, vec![str_("event_"), joined]), "event_1_22");
    assert_eq!(t(ArrayToString, vec![a(), str_(","), str_("*")]), "3,2,*");
    // arr = Array['a','b','c']
    let abc = || call(Array, vec![str_("a"), str_("b"), str_("c")]);
    assert_eq!(t(Equal, vec![abc(), abc()]), "t");
    assert_eq!(
        t(Equal, vec![abc(), call(Array, vec![str_("a"), str_("c")])]),
        "f"
    );
    assert_eq!(t(ConcatOp, vec![abc(), str_("d")]), "{a,b,c,d}");
    assert_eq!(
        t(
            ConcatOp,
            vec![call(Array, vec![i32_(1)]), call(Array, vec![i32_(2)])]
        ),
        "{1,2}"
    );
    assert_eq!(
        t(ArrayContains, vec![abc(), call(Array, vec![str_("c")])]),
        "t"
    );
}

#[test]
fn rows_structs_and_field_access() {
    // row(3, array[1, 2, 3]) into a struct<v1 int, v2 int[]> column
    let target = DataType::Struct(StructType::new(vec![
        ("v1".into(), DataType::Int32),
        ("v2".into(), int_list()),
    ]));
    let r = call(
        Row,
        vec![i32_(3), call(Array, vec![i32_(1), i32_(2), i32_(3)])],
    );
    let e = epochlab_expr::cast::build_cast(
        r,
        target.clone(),
        epochlab_expr::cast::CastContext::Assign,
    )
    .unwrap();
    assert_eq!(e.return_type(), target);
    assert_eq!(text(&run(&e).unwrap()), "(3,\"{1,2,3}\")");
    let field = call(Field, vec![e, i32_(1)]);
    assert_eq!(field.return_type(), int_list());
    assert_eq!(text(&run(&field).unwrap()), "{1,2,3}");
    // array[row(21, 'v21'), row(22, 'v22')]
    let rows = call(
        Array,
        vec![
            call(Row, vec![i32_(21), str_("v21")]),
            call(Row, vec![i32_(22), str_("v22")]),
        ],
    );
    assert_eq!(text(&run(&rows).unwrap()), "{\"(21,v21)\",\"(22,v22)\"}");
}
