SET STREAMING_ENABLE_ARRANGEMENT_BACKFILL=true;
create table t1 (x int, y int, z int);