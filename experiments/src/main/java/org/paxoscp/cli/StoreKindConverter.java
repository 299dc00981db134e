package org.paxoscp.cli;

import org.paxoscp.local.LocalCluster;
import picocli.CommandLine.ITypeConverter;

/** Reads {@code --store hbase|memory}; picocli reports a bad value as a usage error (exit 2). */
final class StoreKindConverter implements ITypeConverter<LocalCluster.StoreKind> {
  @Override
  public LocalCluster.StoreKind convert(String value) {
    return LocalCluster.StoreKind.parse(value);
  }
}
