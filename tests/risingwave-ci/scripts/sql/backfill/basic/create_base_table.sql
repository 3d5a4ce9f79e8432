SET STREAMING_PARALLELISM=1;
create table t1 (_id int, data jsonb);