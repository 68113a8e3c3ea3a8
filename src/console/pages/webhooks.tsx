import { useQuery } from "@tanstack/react-query";
import { ErrorAlert } from "../components/error-alert";
import { useTRPC } from "../trpc";
import { CreateEndpoint } from "../webhooks/create-endpoint";
import { EndpointSection } from "../webhooks/endpoint-section";

/** Outbound webhook endpoints (docs/webhooks.md), everything `bun run textwire webhooks …` does (src/cli.ts). */
export function WebhooksPage() {
  return (
    <>
      <h1>Webhooks</h1>
      <p>Textwire POSTs its events, signed, to these endpoints.</p>
      <EndpointList />
      <CreateEndpoint />
    </>
  );
}

function EndpointList() {
  const trpc = useTRPC();
  // Textwire itself disables endpoints that answer 410 or keep failing: refreshed to show it.
  const endpoints = useQuery({ ...trpc.webhookEndpoints.list.queryOptions(), refetchInterval: 5000 });
  if (endpoints.isPending) return <p aria-busy="true">Loading endpoints…</p>;
  if (endpoints.isError) return <ErrorAlert error={endpoints.error} />;
  if (endpoints.data.endpoints.length === 0) return <p>No endpoints yet.</p>;
  return (
    <section>
      <h2>Endpoints</h2>
      {endpoints.data.endpoints.map((endpoint) => (
        <EndpointSection key={endpoint.id} endpoint={endpoint} />
      ))}
    </section>
  );
}
