use epochlab_common::expr_node::TableFunctionType::*;
use epochlab_common::{DataType, ScalarImpl};
use epochlab_expr::table_function::{eval, return_type};

fn ints(v: &[i32]) -> Vec<Option<ScalarImpl>> {
    v.iter().map(|i| Some(ScalarImpl::Int32(*i))).collect()
}

#[test]
fn generate_series_includes_the_stop_and_range_excludes_it() {
    assert_eq!(
        return_type(GenerateSeries, &[DataType::Int32, DataType::Int32]).unwrap(),
        DataType::Int32
    );
    assert_eq!(
        eval(GenerateSeries, &ints(&[1, 3])).unwrap(),
        ints(&[1, 2, 3])
    );
    assert_eq!(eval(Range, &ints(&[1, 3])).unwrap(), ints(&[1, 2]));
    assert_eq!(
        eval(GenerateSeries, &ints(&[5, 1, -2])).unwrap(),
        ints(&[5, 3, 1])
    );
    assert_eq!(eval(GenerateSeries, &ints(&[3, 1])).unwrap(), ints(&[]));
    assert_eq!(
        eval(GenerateSeries, &ints(&[1, 3, 0]))
            .unwrap_err()
            .to_string(),
        "Invalid parameter step: step size cannot equal zero"
    );
}
