package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.cli.CommandRun.Result;

/**
 * {@code service}: configuration errors (a key file others may read among them) exit 2 naming
 * the key or the fix; an unreachable store exits 1.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ServiceCommandTest {
  @TempDir
  Path dir;

  private Map<String, String> oneDc() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("paxoscp.dcs", "V1");
    p.put("paxoscp.key", CommandRun.key());
    p.put("paxoscp.dc.V1.endpoints", "127.0.0.1:" + CommandRun.freeUdpPort());
    return p;
  }

  private Result service(Map<String, String> props) {
    Path file = CommandRun.write(dir.resolve("service.properties"), props);
    return CommandRun.run(new ServiceCommand(), "--config", file.toString());
  }

  @Test
  void missingDcKeyIsExit2NamingTheKey() {
    Result r = service(oneDc());
    assertEquals(2, r.code(), r.err());
    assertTrue(r.err().contains("paxoscp.service.dc"), r.err());
    assertEquals(1, r.err().strip().lines().count(), r.err());
  }

  @Test
  void missingClusterKeyIsExit2NamingTheKey() {
    Map<String, String> p = oneDc();
    p.remove("paxoscp.dcs");
    p.put("paxoscp.service.dc", "V1");
    Result r = service(p);
    assertEquals(2, r.code(), r.err());
    assertTrue(r.err().contains("paxoscp.dcs"), r.err());
  }

  @Test
  void unknownOrInvalidServiceKeysAreExit2() {
    Map<String, String> p = oneDc();
    p.put("paxoscp.service.dc", "V1");
    p.put("paxoscp.service.thread", "4");
    Result unknown = service(p);
    assertEquals(2, unknown.code(), unknown.err());
    assertTrue(unknown.err().contains("paxoscp.service.thread"), unknown.err());

    p.remove("paxoscp.service.thread");
    p.put("paxoscp.service.store", "disk");
    Result invalid = service(p);
    assertEquals(2, invalid.code(), invalid.err());
    assertTrue(invalid.err().contains("paxoscp.service.store"), invalid.err());
  }

  @Test
  void aKeyFileOthersMayReadIsExit2NamingTheFix() throws Exception {
    Assumptions.assumeTrue(FileSystems.getDefault().supportedFileAttributeViews()
        .contains("posix"), "modes exist on POSIX file systems only");
    Map<String, String> p = oneDc();
    p.put("paxoscp.service.dc", "V1");
    p.put("paxoscp.service.store", "memory");
    Path file = CommandRun.write(dir.resolve("service.properties"), p);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
    Result r = CommandRun.run(new ServiceCommand(), "--config", file.toString());
    assertEquals(2, r.code(), r.err());
    assertTrue(r.err().contains("0644") && r.err().contains("chmod 600 " + file), r.err());
    assertEquals(1, r.err().strip().lines().count(), r.err());
  }

  @Test
  void missingFileOrOptionIsExit2() {
    Result r = CommandRun.run(new ServiceCommand(), "--config", dir.resolve("nope").toString());
    assertEquals(2, r.code(), r.err());
    assertTrue(r.err().contains("no such file"), r.err());
    assertEquals(2, CommandRun.run(new ServiceCommand()).code());
  }

  @Test
  void unreachableStoreIsExit1() {
    Map<String, String> p = oneDc();
    p.put("paxoscp.service.dc", "V1");
    p.put("paxoscp.dc.V1.hbase.zk.quorum", "127.0.0.1");
    p.put("paxoscp.dc.V1.hbase.zk.port", "1");
    p.put("paxoscp.dc.V1.hbase.connect.deadline.ms", "500");
    Result r = service(p);
    assertEquals(1, r.code(), r.err());
    assertTrue(r.err().startsWith("service: the store of DC V1 is unreachable"), r.err());
  }
}
