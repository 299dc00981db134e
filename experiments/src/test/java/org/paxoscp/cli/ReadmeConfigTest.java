package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.store.hbase.HBaseStoreConfig;
import org.paxoscp.transport.ClusterConfig;

/** The README's configuration tables name every key the code reads. */
class ReadmeConfigTest {

  @Test
  void everyConfigKeyHasARowInTheReadme() throws Exception {
    String readme = Files.readString(Path.of("..", "README.md"));
    List<String> keys = new ArrayList<>(ClusterConfig.KEYS.keySet());
    keys.addAll(ServiceConfig.KEYS.keySet());
    for (Field f : HBaseStoreConfig.class.getFields()) {
      if (Modifier.isStatic(f.getModifiers()) && f.getType() == String.class
          && !f.getName().equals("PREFIX")) {
        keys.add((String) f.get(null));
      }
    }
    List<String> missing = new ArrayList<>();
    for (String k : keys) {
      if (!readme.contains("| `" + k + "` |")) {
        missing.add(k);
      }
    }
    assertTrue(keys.size() > 25, "found too few keys to mean anything: " + keys);
    assertTrue(missing.isEmpty(), "README lacks a table row for " + missing);
  }
}
