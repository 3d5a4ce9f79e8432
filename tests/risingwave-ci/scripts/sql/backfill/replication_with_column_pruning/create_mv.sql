create materialized view mv1 as select y, x from t1;
