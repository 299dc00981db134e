package org.paxoscp.client;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Transport;

/** Records every message a client hands to its transport, then passes it on. */
final class RecordingTransport implements Transport {
  /** One message handed to the transport. */
  record Sent(String dc, Message message) {}

  private final Transport delegate;
  final List<Sent> sent = new CopyOnWriteArrayList<>();

  RecordingTransport(Transport delegate) {
    this.delegate = delegate;
  }

  long count(Class<? extends Message> type) {
    return sent.stream().filter(s -> type.isInstance(s.message())).count();
  }

  @Override
  public String localDc() {
    return delegate.localDc();
  }

  @Override
  public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
    sent.add(new Sent(dc, request));
    return delegate.request(dc, request, timeout);
  }

  @Override
  public void send(String dc, Message message) {
    sent.add(new Sent(dc, message));
    delegate.send(dc, message);
  }

  @Override
  public void close() {
    delegate.close();
  }
}
