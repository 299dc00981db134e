package org.paxoscp.store.hbase;

import java.util.List;

/**
 * A DC's HBase namespace holds tables that this version of paxoscp cannot use safely: missing,
 * created by another schema version, with other column families, or with version retention or a
 * TTL that would silently drop log rows or data versions. Nothing is changed when this is thrown;
 * the message names the way out (docs/upgrading.md, "The store schema").
 */
public final class IncompatibleSchemaException extends RuntimeException {
  private final String dc;
  private final List<String> problems;

  public IncompatibleSchemaException(String dc, List<String> problems) {
    super("HBase schema of DC " + dc + " is not what this version expects (schema version "
        + HBaseSchema.SCHEMA_VERSION + "): " + String.join("; ", problems) + ". Nothing was "
        + "changed. Tables of an earlier schema are not migrated in place (every row key "
        + "changed in schema 3): drop them and rebuild the DC from a peer (paxoscp dc rebuild "
        + "--dc " + dc + " --all; docs/upgrading.md)");
    this.dc = dc;
    this.problems = List.copyOf(problems);
  }

  public String dc() {
    return dc;
  }

  /** One human-readable line per problem found. */
  public List<String> problems() {
    return problems;
  }
}
