use super::*;

fn table(name: &str, schema: &str) -> RelationCatalog {
    RelationCatalog {
        name: name.into(),
        schema: schema.into(),
        database: DEFAULT_DATABASE_NAME.into(),
        kind: RelationKind::Table,
        columns: vec![ColumnCatalog::new("v", DataType::Int32)],
        owner: DEFAULT_SUPER_USER.into(),
        ..RelationCatalog::default()
    }
}

fn path(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_new_catalog_has_dev_its_schemas_and_root() {
    let c = Catalog::new();
    let db = c.database("dev").unwrap();
    let schemas: Vec<&str> = db.schemas.keys().map(String::as_str).collect();
    assert_eq!(
        schemas,
        ["information_schema", "pg_catalog", "public", "rw_catalog"]
    );
    assert!(c.user("root").unwrap().is_super);
}

#[test]
fn names_resolve_along_the_search_path() {
    let mut c = Catalog::new();
    c.create_schema("dev", "s1", "root").unwrap();
    c.create_schema("dev", "s2", "root").unwrap();
    let t2 = c.create_relation(table("t", "s2")).unwrap();
    let sp = path(&["s1", "nope", "s2"]);
    assert_eq!(
        c.resolve_relation("dev", &sp, "root", None, "t")
            .unwrap()
            .id,
        t2
    );
    let t1 = c.create_relation(table("t", "s1")).unwrap();
    assert_eq!(
        c.resolve_relation("dev", &sp, "root", None, "t")
            .unwrap()
            .id,
        t1
    );
    let public = path(&["$user", "public"]);
    assert_eq!(
        c.resolve_relation("dev", &public, "root", None, "t")
            .unwrap_err(),
        CatalogError::NotFound("table or source", "t".into())
    );
    assert_eq!(
        c.resolve_relation("dev", &public, "root", Some("x"), "t")
            .unwrap_err(),
        CatalogError::NotFound("schema", "x".into())
    );
    assert_eq!(c.creation_schema("dev", &sp, "root").unwrap(), "s1");
}

#[test]
fn one_namespace_for_every_kind_of_relation() {
    let mut c = Catalog::new();
    c.create_relation(table("t", "public")).unwrap();
    let mut mv = table("t", "public");
    mv.kind = RelationKind::MaterializedView;
    let err = c.create_relation(mv).unwrap_err();
    assert_eq!(err.to_string(), "Catalog error: table with name t exists");
}

#[test]
fn drop_without_cascade_refuses_a_relation_others_depend_on() {
    let mut c = Catalog::new();
    let t = c.create_relation(table("t", "public")).unwrap();
    let mut idx = table("idx", "public");
    idx.kind = RelationKind::Index;
    idx.depends_on = vec![t];
    idx.index = Some(IndexInfo {
        primary_table: t,
        ..IndexInfo::default()
    });
    let i = c.create_relation(idx).unwrap();
    let mut v = table("v", "public");
    v.kind = RelationKind::View;
    v.depends_on = vec![t];
    let v = c.create_relation(v).unwrap();
    let mut mv = table("mv", "public");
    mv.kind = RelationKind::MaterializedView;
    mv.depends_on = vec![v];
    let mv = c.create_relation(mv).unwrap();
    let err = c.drop_relation(t, false).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("Fail to delete table `t` because 1 other relation(s) depend on it"),
        "{err}"
    );
    let dropped: Vec<RelationId> = c
        .drop_relation(t, true)
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(dropped.len(), 4);
    assert!(dropped.iter().position(|x| *x == mv) < dropped.iter().position(|x| *x == v));
    assert!(dropped.iter().position(|x| *x == i) < dropped.iter().position(|x| *x == t));
    assert_eq!(c.relations().count(), 0);
}

#[test]
fn a_table_goes_with_its_indexes_but_not_with_other_dependents() {
    let mut c = Catalog::new();
    let t = c.create_relation(table("t", "public")).unwrap();
    let mut idx = table("idx", "public");
    idx.kind = RelationKind::Index;
    idx.depends_on = vec![t];
    idx.index = Some(IndexInfo {
        primary_table: t,
        ..IndexInfo::default()
    });
    c.create_relation(idx).unwrap();
    assert_eq!(c.drop_relation(t, false).unwrap().len(), 2);
}

#[test]
fn the_wrong_kind_is_the_hint_risingwave_gives() {
    let mut c = Catalog::new();
    c.create_relation(table("t", "public")).unwrap();
    let sp = path(&["$user", "public"]);
    let err = c
        .resolve_relation_of_kind(
            "dev",
            &sp,
            "root",
            None,
            "t",
            RelationKind::MaterializedView,
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "Use `DROP TABLE` to drop a table.");
    let err = c
        .resolve_relation_of_kind("dev", &sp, "root", None, "t", RelationKind::Sink)
        .unwrap_err();
    assert_eq!(err.to_string(), "Catalog error: sink not found: t");
}

#[test]
fn schemas_must_be_empty_to_drop_and_system_ones_stay() {
    let mut c = Catalog::new();
    c.create_schema("dev", "s", "root").unwrap();
    let t = c.create_relation(table("t", "s")).unwrap();
    assert!(matches!(
        c.drop_schema("dev", "s"),
        Err(CatalogError::NotEmpty(..))
    ));
    c.drop_relation(t, false).unwrap();
    c.drop_schema("dev", "s").unwrap();
    assert!(c.drop_schema("dev", "pg_catalog").is_err());
    assert!(c.rename_schema("dev", "pg_catalog", "x").is_err());
}

#[test]
fn users_are_unique_and_owners_cannot_be_dropped() {
    let mut c = Catalog::new();
    c.create_user(UserCatalog::new("u")).unwrap();
    assert!(c.create_user(UserCatalog::new("u")).is_err());
    let t = c.create_relation(table("t", "public")).unwrap();
    c.set_relation_owner(t, "u").unwrap();
    assert!(c.drop_user("u").is_err());
    c.rename_user("u", "w").unwrap();
    assert_eq!(c.relation(t).unwrap().owner, "w");
    assert!(c.drop_user("root").is_err());
}

#[test]
fn privileges_are_checked_against_the_object_kind() {
    assert!(GrantKind::Source.actions(Some(&[Action::Insert])).is_err());
    assert!(
        GrantKind::Database
            .actions(Some(&[Action::Insert]))
            .is_err()
    );
    assert_eq!(GrantKind::Table.actions(None).unwrap().len(), 4);
}
