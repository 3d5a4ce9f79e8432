use std::ops::Bound;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use epochlab_common::{
    Bitmap, DataType, Datum, Epoch, EpochPair, Op, OwnedRow, StreamChunk, TableId, VirtualNode,
    memcmp, value_encoding,
};
use epochlab_storage::{
    Accessor, KeyOp, LocalStateStore, NewLocalOptions, NodeStorage, OpConsistencyLevel,
    StorageError,
};

use crate::error::{Check, StateTableError, StateTableResult};
use epochlab_common::catalog::{Distribution, TableDesc};

/// A chunk's encoded rows: per row, its key (or why it has none) and its value, as ranges of `buf`.
struct EncodedRows {
    buf: Bytes,
    spans: Vec<(
        StateTableResult<std::ops::Range<usize>>,
        std::ops::Range<usize>,
    )>,
}

/// One change to a table, with old values where it has them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    Insert {
        new_row: OwnedRow,
    },
    Delete {
        old_row: OwnedRow,
    },
    Update {
        old_row: OwnedRow,
        new_row: OwnedRow,
    },
}

#[derive(Clone, Copy, Debug)]
pub struct StateTableOptions {
    pub op_consistency_level: OpConsistencyLevel,
    pub is_replicated: bool,
    /// The actor using the table (reported to the node's access observer).
    pub accessor: Option<Accessor>,
}

impl Default for StateTableOptions {
    fn default() -> Self {
        Self {
            op_consistency_level: OpConsistencyLevel::ConsistentOldValue,
            is_replicated: false,
            accessor: None,
        }
    }
}

pub struct StateTable {
    desc: Arc<TableDesc>,
    local: LocalStateStore,
    vnodes: Arc<Bitmap>,
    pk_types: Vec<DataType>,
    /// The value holds every column in order, so a row decodes from the value alone.
    value_is_row: bool,
    epoch: Option<EpochPair>,
    /// Where written rows are encoded (boxed: a table is often held in an enum beside small variants).
    buffers: Box<WriteBuffers>,
    /// The state-cleaning watermark the next commit seals (RisingWave's `state_clean_watermark`).
    clean_watermark: Option<Datum>,
    /// Commits since a lazy cleaning last applied (RisingWave's `WatermarkBufferByEpoch`).
    epochs_since_clean: usize,
}

/// Epochs between two cleanings of a table whose executor cleans lazily (RisingWave's
/// `STATE_CLEANING_PERIOD_EPOCH`).
pub const STATE_CLEANING_PERIOD_EPOCH: usize = 300;

struct WriteBuffers {
    /// A row's key and value are encoded here first, then copied into `arena`.
    scratch: Vec<u8>,
    /// The keys and values written this epoch, back to back in shared blocks: a written row costs a copy
    /// into the block, not an allocation per key and per value. Dropped at commit (the mem-table's copy has
    /// gone into an imm by then), so a block lives about an epoch.
    arena: BytesMut,
    /// The size of the next block: it doubles within an epoch, up to `ARENA_BLOCK_MAX`.
    arena_block: usize,
}

impl WriteBuffers {
    fn new() -> Self {
        Self {
            scratch: Vec::new(),
            arena: BytesMut::new(),
            arena_block: ARENA_BLOCK_MIN,
        }
    }

    /// `bytes`, copied into the arena; a new block when the current one has no room.
    fn arena_copy(&mut self, bytes: &[u8]) -> Bytes {
        if self.arena.capacity() - self.arena.len() < bytes.len() {
            self.arena = BytesMut::with_capacity(self.arena_block.max(bytes.len()));
            self.arena_block = (self.arena_block * 2).min(ARENA_BLOCK_MAX);
        }
        self.arena.extend_from_slice(bytes);
        self.arena.split().freeze()
    }

    /// A new epoch: the arena's blocks go (the mem-table's keys and values went into an imm).
    fn reset_arena(&mut self) {
        self.arena = BytesMut::new();
        self.arena_block = ARENA_BLOCK_MIN;
    }
}

/// The first arena block of an epoch, and the largest.
const ARENA_BLOCK_MIN: usize = 256;
const ARENA_BLOCK_MAX: usize = 32 << 10;

impl StateTable {
    /// A table over a new local store on `node`, owning `vnodes`.
    pub fn new(desc: Arc<TableDesc>, node: &NodeStorage, vnodes: Arc<Bitmap>) -> Self {
        Self::with_options(desc, node, vnodes, StateTableOptions::default())
    }

    /// A replicated table: arrangement backfill's copy of its upstream table. Its flushed writes are visible to
    /// its own reads and never uploaded.
    pub fn new_replicated(desc: Arc<TableDesc>, node: &NodeStorage, vnodes: Arc<Bitmap>) -> Self {
        let opts = StateTableOptions {
            is_replicated: true,
            ..Default::default()
        };
        Self::with_options(desc, node, vnodes, opts)
    }

    pub fn with_options(
        desc: Arc<TableDesc>,
        node: &NodeStorage,
        vnodes: Arc<Bitmap>,
        opts: StateTableOptions,
    ) -> Self {
        desc.validate();
        assert_eq!(
            vnodes.len(),
            desc.vnode_count.get(),
            "bitmap size must be the vnode count"
        );
        let local = node.new_local(NewLocalOptions {
            table_id: desc.table_id,
            op_consistency_level: opts.op_consistency_level,
            is_replicated: opts.is_replicated,
            accessor: opts.accessor,
            prefix_filter_len: prefix_filter_len(&desc),
        });
        let n = desc.column_types.len();
        let value_is_row = desc.value_indices.iter().copied().eq(0..n);
        Self {
            pk_types: desc.pk_types(),
            desc,
            local,
            vnodes,
            value_is_row,
            epoch: None,
            buffers: Box::new(WriteBuffers::new()),
            clean_watermark: None,
            epochs_since_clean: 0,
        }
    }

    pub fn table_id(&self) -> TableId {
        self.desc.table_id
    }

    pub fn desc(&self) -> &Arc<TableDesc> {
        &self.desc
    }

    pub fn vnodes(&self) -> &Arc<Bitmap> {
        &self.vnodes
    }

    pub fn is_dirty(&self) -> bool {
        self.local.is_dirty()
    }

    /// The generation of the node this table's store was created at (a zombie has an old one).
    pub fn generation(&self) -> u64 {
        self.local.generation()
    }

    /// The epoch pair of the last `init_epoch` or `commit`: writes now go to `curr`.
    pub fn epoch(&self) -> StateTableResult<EpochPair> {
        self.epoch.ok_or(StateTableError::NotInitialized {
            table_id: self.desc.table_id,
        })
    }

    pub fn init_epoch(&mut self, epoch: EpochPair) {
        assert!(self.epoch.is_none(), "state table initialised twice");
        self.local.init(epoch.curr);
        self.epoch = Some(epoch);
    }

    /// The vnode of a pk.
    pub fn compute_vnode_by_pk(&self, pk: &OwnedRow) -> StateTableResult<VirtualNode> {
        self.vnode_of(|p| pk.datum_at(p))
    }

    /// The vnode of the pk whose `p`-th datum is `pk_at(p)`.
    fn vnode_of<'a>(&self, pk_at: impl Fn(usize) -> &'a Datum) -> StateTableResult<VirtualNode> {
        vnode_of(&self.desc, pk_at)
    }

    pub fn pk_of(&self, row: &OwnedRow) -> OwnedRow {
        row.project(&self.desc.pk_indices)
    }

    /// The storage key of a pk, after checking its vnode is this table's.
    fn key_of_pk(&self, pk: &OwnedRow) -> StateTableResult<Bytes> {
        self.key_of(|p| pk.datum_at(p))
    }

    /// Vnode (2 bytes BE) then the memcomparable pk, whose `p`-th datum is `pk_at(p)`.
    fn key_of<'a>(&self, pk_at: impl Fn(usize) -> &'a Datum) -> StateTableResult<Bytes> {
        let mut key = Vec::with_capacity(VirtualNode::SIZE + self.desc.pk_orders.len() * 9);
        self.key_into(pk_at, &mut key)?;
        Ok(Bytes::from(key))
    }

    /// Append the storage key of a pk to `buf`, after checking its vnode is this table's.
    fn key_into<'a>(
        &self,
        pk_at: impl Fn(usize) -> &'a Datum,
        buf: &mut Vec<u8>,
    ) -> StateTableResult<()> {
        let vnode = self.vnode_of(&pk_at)?;
        if !self.vnodes.is_set(vnode.to_index()) {
            return Err(StateTableError::VnodeNotOwned {
                table_id: self.desc.table_id,
                vnode,
            });
        }
        buf.extend_from_slice(&vnode.to_be_bytes());
        for (p, &order) in self.desc.pk_orders.iter().enumerate() {
            memcmp::encode_datum(pk_at(p), order, buf);
        }
        Ok(())
    }

    fn decode(&self, key: &[u8], value: &[u8]) -> StateTableResult<OwnedRow> {
        decode_with(&self.desc, &self.pk_types, self.value_is_row, key, value)
    }

    /// Turn a storage consistency error into a row-level one that names the pk.
    fn map_write_error(&self, pk: &OwnedRow, e: StorageError) -> StateTableError {
        let table_id = self.desc.table_id;
        let StorageError::InconsistentOperation(i) = &e else {
            return StateTableError::Storage(e);
        };
        let pk = pk.clone();
        match (&i.prev, &i.new) {
            (None | Some(KeyOp::Delete(_)), _) => StateTableError::RowNotFound {
                table_id,
                pk,
                check: Check::StateTableWrite,
            },
            (_, KeyOp::Insert(_)) => StateTableError::RowExists { table_id, pk },
            _ => StateTableError::OldRowMismatch { table_id, pk },
        }
    }

    /// The storage key of `row`'s pk and the encoded values of `rows`, as slices of one arena block.
    fn encode_key_values<const N: usize>(
        &mut self,
        row: &OwnedRow,
        rows: [&OwnedRow; N],
    ) -> StateTableResult<(Bytes, [Bytes; N])> {
        let mut buf = std::mem::take(&mut self.buffers.scratch);
        buf.clear();
        let pk_indices = &self.desc.pk_indices;
        let key = self.key_into(|p| row.datum_at(pk_indices[p]), &mut buf);
        let key_end = buf.len();
        let mut ends = [key_end; N];
        for (r, end) in rows.iter().zip(&mut ends).take_while(|_| key.is_ok()) {
            assert_eq!(
                r.len(),
                self.desc.column_types.len(),
                "row width must match the table"
            );
            value_encoding::encode_projected_into(r, &self.desc.value_indices, &mut buf);
            *end = buf.len();
        }
        let all = key.map(|()| self.buffers.arena_copy(&buf));
        self.buffers.scratch = buf;
        let all = all?;
        let mut start = key_end;
        let values = ends.map(|end| {
            let v = all.slice(start..end);
            start = end;
            v
        });
        Ok((all.slice(..key_end), values))
    }

    pub fn insert(&mut self, row: &OwnedRow) -> StateTableResult<()> {
        let (key, [value]) = self.encode_key_values(row, [row])?;
        self.local
            .insert(key, value, None)
            .map_err(|e| self.map_write_error(&self.pk_of(row), e))
    }

    pub fn delete(&mut self, row: &OwnedRow) -> StateTableResult<()> {
        let (key, [old]) = self.encode_key_values(row, [row])?;
        self.local
            .delete(key, old)
            .map_err(|e| self.map_write_error(&self.pk_of(row), e))
    }

    /// Replace `old` by `new`; both must have the same pk.
    pub fn update(&mut self, old: &OwnedRow, new: &OwnedRow) -> StateTableResult<()> {
        let pk_indices = &self.desc.pk_indices;
        let same_pk = pk_indices.iter().all(|&i| old[i] == new[i]);
        if !same_pk {
            return Err(StateTableError::PkChanged {
                table_id: self.desc.table_id,
                old: self.pk_of(old),
                new: self.pk_of(new),
            });
        }
        let (key, [old_v, new_v]) = self.encode_key_values(old, [old, new])?;
        self.local
            .insert(key, new_v, Some(old_v))
            .map_err(|e| self.map_write_error(&self.pk_of(old), e))
    }

    pub fn write_record(&mut self, record: &Record) -> StateTableResult<()> {
        match record {
            Record::Insert { new_row } => self.insert(new_row),
            Record::Delete { old_row } => self.delete(old_row),
            Record::Update { old_row, new_row } => self.update(old_row, new_row),
        }
    }

    /// Apply a chunk's visible rows; an `UpdateDelete` followed by an `UpdateInsert` of the same pk is one
    /// update.
    pub fn write_chunk(&mut self, chunk: &StreamChunk) -> StateTableResult<()> {
        let rows: Vec<(Op, &OwnedRow)> = chunk.rows().collect();
        let encoded = self.encode_rows(&rows);
        let mut pending_delete: Option<(usize, &OwnedRow)> = None;
        for (i, &(op, row)) in rows.iter().enumerate() {
            if let Some((j, old)) = pending_delete.take() {
                if op == Op::UpdateInsert && self.pk_of(old) == self.pk_of(row) {
                    self.update(old, row)?;
                    continue;
                }
                self.write_encoded(&encoded, j, old, Op::Delete)?;
            }
            match op {
                Op::Insert | Op::UpdateInsert => {
                    self.write_encoded(&encoded, i, row, Op::Insert)?
                }
                Op::Delete => self.write_encoded(&encoded, i, row, Op::Delete)?,
                Op::UpdateDelete => pending_delete = Some((i, row)),
            }
        }
        if let Some((j, old)) = pending_delete {
            self.write_encoded(&encoded, j, old, Op::Delete)?;
        }
        self.local.try_flush()?;
        Ok(())
    }

    /// The keys and values of a chunk's rows, in one shared buffer: a key or value is a slice of it, so a
    /// chunk costs one allocation instead of two per row. A row whose key cannot be built keeps its error,
    /// returned when the row's turn comes (as a row-by-row write would).
    fn encode_rows(&self, rows: &[(Op, &OwnedRow)]) -> EncodedRows {
        let (pk_indices, value_indices) = (&self.desc.pk_indices, &self.desc.value_indices);
        let capacity = rows
            .iter()
            .map(|(_, r)| {
                VirtualNode::SIZE
                    + pk_indices.len() * 9
                    + value_encoding::projected_len(r, value_indices)
            })
            .sum();
        let mut buf = Vec::with_capacity(capacity);
        let mut spans = Vec::with_capacity(rows.len());
        for (_, row) in rows {
            let start = buf.len();
            let key = self.key_into(|p| row.datum_at(pk_indices[p]), &mut buf);
            let key = key.map(|()| start..buf.len());
            if key.is_err() {
                buf.truncate(start);
            }
            let value_start = buf.len();
            assert_eq!(
                row.len(),
                self.desc.column_types.len(),
                "row width must match the table"
            );
            value_encoding::encode_projected_into(row, value_indices, &mut buf);
            spans.push((key, value_start..buf.len()));
        }
        EncodedRows {
            buf: Bytes::from(buf),
            spans,
        }
    }

    /// Insert or delete row `i` of `encoded` (`row` is the row, for errors).
    fn write_encoded(
        &mut self,
        encoded: &EncodedRows,
        i: usize,
        row: &OwnedRow,
        op: Op,
    ) -> StateTableResult<()> {
        let (key, value) = &encoded.spans[i];
        let key = match key {
            Ok(k) => encoded.buf.slice(k.clone()),
            Err(e) => return Err(e.clone()),
        };
        let value = encoded.buf.slice(value.clone());
        let written = match op {
            Op::Delete => self.local.delete(key, value),
            _ => self.local.insert(key, value, None),
        };
        written.map_err(|e| self.map_write_error(&self.pk_of(row), e))
    }

    /// The row with primary key `pk`, at the table's current epoch.
    pub fn get_row(&self, pk: &OwnedRow) -> StateTableResult<Option<OwnedRow>> {
        let key = self.key_of_pk(pk)?;
        match self.local.get(&key)? {
            Some(v) => Ok(Some(self.decode(&key, &v)?)),
            None => Ok(None),
        }
    }

    /// Rows of one vnode whose pk (or pk prefix) lies in `pk_range`, in pk order. The iterator owns its data:
    /// writes after this call are not seen by it.
    pub fn iter_with_vnode(
        &self,
        vnode: VirtualNode,
        pk_range: (Bound<OwnedRow>, Bound<OwnedRow>),
    ) -> StateTableResult<impl Iterator<Item = StateTableResult<OwnedRow>> + use<>> {
        if !self.vnodes.is_set(vnode.to_index()) {
            return Err(StateTableError::VnodeNotOwned {
                table_id: self.desc.table_id,
                vnode,
            });
        }
        let prefix = vnode.to_be_bytes();
        let encode = |pk: &OwnedRow| {
            let mut key = BytesMut::with_capacity(2 + pk.len() * 9);
            key.extend_from_slice(&prefix);
            let mut buf = Vec::new();
            memcmp::encode_row(pk, &self.desc.pk_orders[..pk.len()], &mut buf);
            key.extend_from_slice(&buf);
            key.freeze()
        };
        let start = match &pk_range.0 {
            Bound::Unbounded => Bound::Included(Bytes::copy_from_slice(&prefix)),
            Bound::Included(pk) => Bound::Included(encode(pk)),
            // Past every key that starts with this pk (prefix).
            Bound::Excluded(pk) => next_key(&encode(pk)).map_or(Bound::Unbounded, Bound::Included),
        };
        let end = match &pk_range.1 {
            Bound::Unbounded => next_key(&prefix).map_or(Bound::Unbounded, Bound::Excluded),
            Bound::Included(pk) => next_key(&encode(pk)).map_or(Bound::Unbounded, Bound::Excluded),
            Bound::Excluded(pk) => Bound::Excluded(encode(pk)),
        };
        let iter = self.local.iter((start, end))?;
        let desc = self.desc.clone();
        let pk_types = self.pk_types.clone();
        let value_is_row = self.value_is_row;
        Ok(iter.map(move |(k, v)| decode_with(&desc, &pk_types, value_is_row, &k, &v)))
    }

    /// Every row of every vnode this table owns, in (vnode, pk) order.
    pub fn iter_all(&self) -> StateTableResult<Vec<OwnedRow>> {
        let mut out = Vec::new();
        for v in self.vnodes.iter_ones() {
            for row in self.iter_with_vnode(
                VirtualNode::from_index(v),
                (Bound::Unbounded, Bound::Unbounded),
            )? {
                out.push(row?);
            }
        }
        Ok(out)
    }

    /// Clean the rows whose first pk column is below `watermark` (RisingWave's `update_watermark`): the next
    /// commit seals a table watermark over the table's vnodes, and from its epoch no read sees those rows (a
    /// delete of one is then a delete of a missing row). `eager` applies it at this commit; otherwise it
    /// applies only if [`STATE_CLEANING_PERIOD_EPOCH`] commits have passed since the last cleaning and is
    /// dropped if not, as RisingWave's `WatermarkBufferByEpoch` drops it (a later watermark cleans instead). A table whose first pk column is descending, or that has no pk, cleans nothing
    /// (RisingWave's descending direction is not modelled).
    pub fn update_watermark(&mut self, watermark: Datum, eager: bool) {
        if eager || self.epochs_since_clean >= STATE_CLEANING_PERIOD_EPOCH {
            self.epochs_since_clean = 0;
            self.clean_watermark = Some(watermark);
        }
    }

    /// Whether `row`'s key is below a table watermark the table's reads apply: the row was cleaned (a write of
    /// it would touch a row no read sees).
    pub fn is_cleaned(&self, row: &OwnedRow) -> StateTableResult<bool> {
        let key = self.key_of(|p| row.datum_at(self.desc.pk_indices[p]))?;
        Ok(self.local.is_hidden(&key)?)
    }

    /// The table watermark of the commit under way, if the table cleans.
    fn take_table_watermark(&mut self) -> Option<epochlab_storage::VnodeWatermark> {
        let watermark = self.clean_watermark.take()?;
        let order = *self.desc.pk_orders.first()?;
        if order.descending || watermark.is_none() {
            return None;
        }
        let mut bytes = Vec::new();
        memcmp::encode_datum(&watermark, order, &mut bytes);
        Some(epochlab_storage::VnodeWatermark {
            vnodes: self.vnodes.clone(),
            watermark: bytes,
        })
    }

    /// Commit the current epoch (`new.prev` must be it) and move to `new.curr`.
    pub fn commit(&mut self, new: EpochPair) -> StateTableResult<()> {
        let current = self.epoch()?;
        if current.curr != new.prev {
            return Err(StateTableError::EpochMismatch {
                table_id: self.desc.table_id,
                current: current.curr,
                new,
            });
        }
        if self.local.is_dirty() {
            self.local.flush()?;
        }
        self.buffers.reset_arena();
        self.epochs_since_clean += 1;
        let watermark = self.take_table_watermark();
        self.local.seal_current_epoch_with(new.curr, watermark)?;
        self.epoch = Some(new);
        Ok(())
    }

    /// Take a new vnode bitmap (scaling); only between epochs, with nothing uncommitted.
    pub fn update_vnode_bitmap(&mut self, new: Arc<Bitmap>) -> StateTableResult<Arc<Bitmap>> {
        if self.local.is_dirty() {
            return Err(StateTableError::DirtyOnVnodeUpdate {
                table_id: self.desc.table_id,
            });
        }
        assert_eq!(
            new.len(),
            self.desc.vnode_count.get(),
            "bitmap size must be the vnode count"
        );
        Ok(std::mem::replace(&mut self.vnodes, new))
    }

    /// Take the table's new schema after `ALTER TABLE .. ADD COLUMN` (RisingWave's replace-table): the
    /// same table and key, columns appended; only between epochs, with nothing uncommitted. Rows stored
    /// before read NULL in the new columns.
    pub fn update_desc(&mut self, new: Arc<TableDesc>) -> StateTableResult<()> {
        if self.local.is_dirty() {
            return Err(StateTableError::DirtyOnSchemaChange {
                table_id: self.desc.table_id,
            });
        }
        let old = &self.desc;
        if !(new.table_id == old.table_id
            && new.pk_indices == old.pk_indices
            && new.pk_orders == old.pk_orders
            && new.column_types.starts_with(&old.column_types))
        {
            return Err(StateTableError::SchemaNotAppended {
                table_id: self.desc.table_id,
            });
        }
        self.value_is_row = new
            .value_indices
            .iter()
            .copied()
            .eq(0..new.column_types.len());
        self.desc = new;
        Ok(())
    }

    /// The epoch reads are taken at.
    pub fn read_epoch(&self) -> StateTableResult<Epoch> {
        Ok(self.epoch()?.curr)
    }
}

/// The bytes of a key that a read of one distribution key fixes (vnode, then the dist key's columns), where
/// the dist key is a strict prefix of the pk of fixed-width types: a join side's rows table read by its
/// join key. Otherwise none.
fn prefix_filter_len(desc: &TableDesc) -> Option<usize> {
    let Distribution::HashDistKey { dist_key_in_pk } = &desc.distribution else {
        return None;
    };
    let n = dist_key_in_pk.len();
    let pk_types = desc.pk_types();
    if n == 0 || n >= pk_types.len() || dist_key_in_pk.iter().copied().ne(0..n) {
        return None;
    }
    let widths: Option<usize> = pk_types[..n].iter().map(memcmp_width).sum();
    widths.map(|w| VirtualNode::SIZE + w)
}

/// The memcomparable length of a non-NULL value of `t` (its null flag included), for types of one length.
fn memcmp_width(t: &DataType) -> Option<usize> {
    let value = match t {
        DataType::Boolean => 1,
        DataType::Int16 => 2,
        DataType::Int32 | DataType::Float32 | DataType::Date => 4,
        DataType::Int64 | DataType::Serial | DataType::Float64 | DataType::Timestamptz => 8,
        DataType::Interval => 16,
        _ => return None,
    };
    Some(1 + value)
}

/// The vnode of a pk of `desc` whose `p`-th datum is `pk_at(p)`, by the table's distribution.
pub(crate) fn vnode_of<'a>(
    desc: &TableDesc,
    pk_at: impl Fn(usize) -> &'a Datum,
) -> StateTableResult<VirtualNode> {
    let count = desc.vnode_count;
    Ok(match &desc.distribution {
        Distribution::Singleton => VirtualNode::from_index(0),
        Distribution::HashDistKey { dist_key_in_pk } => {
            VirtualNode::compute_datums(dist_key_in_pk.iter().map(|&p| pk_at(p)), count)
        }
        Distribution::VnodeColumn {
            vnode_col_idx_in_pk,
        } => {
            let d = pk_at(*vnode_col_idx_in_pk);
            let v = d
                .as_ref()
                .and_then(VirtualNode::from_scalar)
                .filter(|v| v.to_index() < count.get());
            v.ok_or_else(|| StateTableError::BadVnodeColumn {
                table_id: desc.table_id,
                value: format!("{d:?}"),
                count: count.get(),
            })?
        }
    })
}

pub(crate) fn decode_with(
    desc: &TableDesc,
    pk_types: &[DataType],
    value_is_row: bool,
    key: &[u8],
    value: &[u8],
) -> StateTableResult<OwnedRow> {
    let table_id = desc.table_id;
    let err = |source| StateTableError::Decode { table_id, source };
    let values = value_encoding::decode_row(value).map_err(err)?;
    if value_is_row {
        return Ok(to_width(values, desc.column_types.len()));
    }
    let pk =
        memcmp::decode_row(&key[VirtualNode::SIZE..], pk_types, &desc.pk_orders).map_err(err)?;
    let mut datums = vec![None; desc.column_types.len()];
    for (&i, d) in desc.pk_indices.iter().zip(pk.into_inner()) {
        datums[i] = d;
    }
    for (&i, d) in desc.value_indices.iter().zip(values.into_inner()) {
        datums[i] = d;
    }
    Ok(OwnedRow::new(datums))
}

/// A whole stored row at the table's width now: a row written before `ALTER TABLE .. ADD COLUMN` reads
/// NULL for the columns added since (they are appended, never reused), and a reader planned over fewer
/// columns reads the ones it knows (RisingWave's column-aware encoding reads by column id).
fn to_width(row: OwnedRow, width: usize) -> OwnedRow {
    if row.len() == width {
        return row;
    }
    let mut datums = row.into_inner();
    datums.resize(width, None);
    OwnedRow::new(datums)
}

/// The smallest key greater than every key that starts with `prefix` (storage's, so that storage sees the
/// read as a prefix read); `None` when there is none.
pub(crate) fn next_key(prefix: &[u8]) -> Option<Bytes> {
    epochlab_storage::committed::next_key(prefix).map(Bytes::from)
}

#[cfg(test)]
mod tests {
    use epochlab_common::plan::join_side_tables;
    use epochlab_common::{OrderType, ScalarImpl, VnodeCount};

    use super::*;

    #[test]
    fn memcmp_widths_are_the_encodings_lengths() {
        let values = [
            (DataType::Boolean, ScalarImpl::Bool(true)),
            (DataType::Int16, ScalarImpl::Int16(-3)),
            (DataType::Int32, ScalarImpl::Int32(7)),
            (DataType::Int64, ScalarImpl::Int64(1 << 40)),
        ];
        for (t, v) in values {
            let mut buf = Vec::new();
            memcmp::encode_datum(&Some(v), OrderType::ascending(), &mut buf);
            assert_eq!(memcmp_width(&t), Some(buf.len()), "{t:?}");
        }
        assert_eq!(memcmp_width(&DataType::Varchar), None);
    }

    #[test]
    fn a_join_side_prefix_is_its_vnode_and_join_key() {
        let count = VnodeCount::new(16).unwrap();
        let types = [DataType::Int64, DataType::Int64, DataType::Varchar];
        let (rows, _) = join_side_tables(&types, &[0], &[1], false, count);
        assert_eq!(prefix_filter_len(&rows), Some(VirtualNode::SIZE + 9));
        let (by_varchar, _) = join_side_tables(&types, &[2], &[1], false, count);
        assert_eq!(prefix_filter_len(&by_varchar), None);
    }
}
