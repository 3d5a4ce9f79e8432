//! `EXPLAIN`: a plan printed as RisingWave prints one (a tree of `StreamMaterialize`, `StreamProject`, ...).
