import { useMutation } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { LINE_NETWORKS, type LineNetwork } from "../../vocabulary/lines";
import { ErrorAlert } from "../components/error-alert";
import { useTRPC } from "../trpc";
import { useInvalidateLines, type Line } from "./line";
import { FallbackSelect, NetworkFields, readNetworkFields } from "./line-fields";

const isNetwork = (value: string): value is LineNetwork => LINE_NETWORKS.some((n) => n === value);

/** Adds a line, as `textwire lines add` does (src/cli.ts): the fields follow the network chosen. */
export function CreateLine({ lines }: { lines: Line[] }) {
  const trpc = useTRPC();
  const headingId = useId();
  const nameHintId = useId();
  const addressHintId = useId();
  const [network, setNetwork] = useState<LineNetwork>("loopback");
  const invalidateLines = useInvalidateLines();
  const create = useMutation(trpc.lines.create.mutationOptions({ onSuccess: invalidateLines }));
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    const address = String(data.get("address") ?? "").trim();
    const fallback = String(data.get("fallback") ?? "");
    create.mutate(
      {
        name: String(data.get("name") ?? ""),
        network,
        address: address || undefined,
        ...readNetworkFields(form, network),
        enabled: data.get("enabled") === "on",
        default: data.get("default") === "on",
        fallback: fallback || undefined,
      },
      {
        onSuccess: () => {
          form.reset();
          setNetwork("loopback");
        },
      },
    );
  };
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>New line</h2>
      <form onSubmit={submit}>
        <div className="grid">
          <div>
            <label>
              Name
              <input name="name" required autoComplete="off" pattern="[a-z0-9\-]{1,40}" aria-describedby={nameHintId} />
            </label>
            <small id={nameHintId}>1 to 40 lowercase letters, digits or "-", e.g. support.</small>
          </div>
          <label>
            Network
            <select name="network" value={network} onChange={(e) => isNetwork(e.target.value) && setNetwork(e.target.value)}>
              {LINE_NETWORKS.map((n) => (
                <option key={n}>{n}</option>
              ))}
            </select>
          </label>
        </div>
        <label>
          Address
          <input name="address" autoComplete="off" aria-describedby={addressHintId} required={network === "twilio"} />
        </label>
        <small id={addressHintId}>Our number on this line in E.164 (+14155550100), or the iMessage account's handle.</small>
        <NetworkFields key={network} network={network} />
        <FallbackSelect lines={lines} />
        <label>
          <input type="checkbox" name="enabled" role="switch" defaultChecked />
          Enabled
        </label>
        <label>
          <input type="checkbox" name="default" />
          Make it the default line
        </label>
        <button type="submit" aria-busy={create.isPending} disabled={create.isPending}>
          Add line
        </button>
      </form>
      <ErrorAlert error={create.error} />
      {create.data && (
        <p role="status">
          Line {create.data.line.name} added.
          {create.data.line.webhook_url && <> Point the network's webhooks at its webhook URL, shown above.</>}
        </p>
      )}
    </section>
  );
}
