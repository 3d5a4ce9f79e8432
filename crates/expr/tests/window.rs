use epochlab_common::expr_node::{AggKind, Frame, FrameBound, WindowFuncCall, WindowFuncKind};
use epochlab_common::{DataType, OrderType, OwnedRow, ScalarImpl};
use epochlab_expr::window::{eval_partition, infer_return_type};

/// Rows (k, v) sorted by k.
fn rows(pairs: &[(i32, i32)]) -> Vec<OwnedRow> {
    pairs
        .iter()
        .map(|(k, v)| epochlab_common::row![*k, *v])
        .collect()
}

fn call(kind: WindowFuncKind, frame: Option<Frame>) -> WindowFuncCall {
    let arg_types = vec![DataType::Int32];
    WindowFuncCall {
        kind,
        args: vec![1],
        ret: infer_return_type(kind, &arg_types).unwrap(),
        arg_types,
        frame,
        offset: 1,
    }
}

fn out(call: &WindowFuncCall, rows: &[OwnedRow]) -> Vec<String> {
    let order = [(0, OrderType::ascending())];
    eval_partition(call, &order, rows)
        .unwrap()
        .iter()
        .map(|d| d.as_ref().map_or("NULL".to_string(), ScalarImpl::to_string))
        .collect()
}

#[test]
fn ranking_functions() {
    let r = rows(&[(1, 10), (1, 20), (2, 30), (3, 40), (3, 50)]);
    assert_eq!(
        out(&call(WindowFuncKind::RowNumber, None), &r),
        ["1", "2", "3", "4", "5"]
    );
    assert_eq!(
        out(&call(WindowFuncKind::Rank, None), &r),
        ["1", "1", "3", "4", "4"]
    );
    assert_eq!(
        out(&call(WindowFuncKind::DenseRank, None), &r),
        ["1", "1", "2", "3", "3"]
    );
}

#[test]
fn lag_and_lead() {
    let r = rows(&[(1, 10), (2, 20), (3, 30)]);
    assert_eq!(
        out(&call(WindowFuncKind::Lag, None), &r),
        ["NULL", "10", "20"]
    );
    assert_eq!(
        out(&call(WindowFuncKind::Lead, None), &r),
        ["20", "30", "NULL"]
    );
    let mut lag2 = call(WindowFuncKind::Lag, None);
    lag2.offset = 2;
    assert_eq!(out(&lag2, &r), ["NULL", "NULL", "10"]);
}

#[test]
fn aggregates_over_rows_frames() {
    let r = rows(&[(1, 1), (1, 2), (2, 3), (3, 4)]);
    let sum = |frame| out(&call(WindowFuncKind::Aggregate(AggKind::Sum), frame), &r);
    // RisingWave's default with ORDER BY is ROWS UNBOUNDED PRECEDING: peers are not included. Its
    // incremental sum slides with retractions: a frame emptied of values sums to 0.
    assert_eq!(sum(None), ["1", "3", "6", "10"]);
    assert_eq!(
        sum(Some(Frame::rows(
            FrameBound::Preceding(1),
            FrameBound::Following(1)
        ))),
        ["3", "6", "9", "7"]
    );
    assert_eq!(
        sum(Some(Frame::rows(
            FrameBound::CurrentRow,
            FrameBound::UnboundedFollowing
        ))),
        ["10", "9", "7", "4"]
    );
    assert_eq!(
        sum(Some(Frame::rows(
            FrameBound::Following(1),
            FrameBound::Following(2)
        ))),
        ["5", "7", "4", "0"]
    );
    let mut excl = Frame::rows(
        FrameBound::UnboundedPreceding,
        FrameBound::UnboundedFollowing,
    );
    excl.exclude_current_row = true;
    assert_eq!(sum(Some(excl)), ["9", "8", "7", "6"]);
    let first = out(
        &call(
            WindowFuncKind::Aggregate(AggKind::FirstValue),
            Some(Frame::rows(
                FrameBound::Preceding(2),
                FrameBound::CurrentRow,
            )),
        ),
        &r,
    );
    assert_eq!(first, ["1", "1", "1", "2"]);
    let avg = out(&call(WindowFuncKind::Aggregate(AggKind::Avg), None), &r);
    // rust_decimal (as in RisingWave) keeps the quotient's scale: 3 / 2 is 1.50.
    assert_eq!(avg, ["1", "1.50", "2", "2.50"]);
    // Without ORDER BY the frame is the whole partition.
    let whole = eval_partition(
        &call(WindowFuncKind::Aggregate(AggKind::Max), None),
        &[],
        &r,
    )
    .unwrap();
    assert!(whole.iter().all(|d| *d == Some(ScalarImpl::Int32(4))));
}

#[test]
fn excluding_the_current_row_aggregates_each_frame_afresh() {
    let mut frame = Frame::rows(FrameBound::CurrentRow, FrameBound::CurrentRow);
    frame.exclude_current_row = true;
    let r = rows(&[(1, 1), (2, 2)]);
    assert_eq!(
        out(
            &call(WindowFuncKind::Aggregate(AggKind::Sum), Some(frame)),
            &r
        ),
        ["NULL", "NULL"]
    );
}
