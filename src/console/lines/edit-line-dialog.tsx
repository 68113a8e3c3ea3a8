import { useMutation } from "@tanstack/react-query";
import { useId, type FormEvent } from "react";
import { ErrorAlert } from "../components/error-alert";
import { Modal, SaveFooter } from "../components/modal";
import { useTRPC } from "../trpc";
import { useInvalidateLines, type Line } from "./line";
import { FallbackSelect, NetworkFields, readNetworkFields } from "./line-fields";

/** Changes a line added through the API, as `textwire lines update` does (src/cli.ts): credentials left blank are kept. */
export function EditLineDialog({ line, lines, onClose }: { line: Line; lines: Line[]; onClose: () => void }) {
  const trpc = useTRPC();
  const formId = useId();
  const defaultHintId = useId();
  const invalidateLines = useInvalidateLines();
  const update = useMutation(trpc.lines.update.mutationOptions({ onSuccess: invalidateLines }));
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    const { settings, credentials } = readNetworkFields(form, line.network);
    const address = String(data.get("address") ?? "").trim();
    update.mutate(
      {
        id: line.id,
        name: String(data.get("name") ?? ""),
        address: address || null,
        settings,
        // Only the credentials typed replace the stored ones.
        credentials: Object.keys(credentials).length > 0 ? credentials : undefined,
        enabled: data.get("enabled") === "on",
        default: data.get("default") === "on" ? true : undefined,
        fallback: String(data.get("fallback") ?? "") || null,
      },
      { onSuccess: onClose },
    );
  };
  return (
    <Modal title={`Edit line ${line.name}`} onClose={onClose}>
      <form id={formId} onSubmit={submit}>
        <label>
          Name
          <input name="name" required autoComplete="off" pattern="[a-z0-9\-]{1,40}" defaultValue={line.name} />
        </label>
        <label>
          Address
          <input name="address" autoComplete="off" defaultValue={line.address ?? ""} />
        </label>
        <NetworkFields network={line.network} line={line} />
        <FallbackSelect lines={lines} self={line.id} value={line.fallback} />
        <label>
          <input type="checkbox" name="enabled" role="switch" defaultChecked={line.enabled} />
          Enabled
        </label>
        <label>
          <input
            type="checkbox"
            name="default"
            defaultChecked={line.default}
            disabled={line.default}
            aria-describedby={line.default ? defaultHintId : undefined}
          />
          Default line
        </label>
        {line.default && <small id={defaultHintId}>This is the default line: make another line default to move the mark.</small>}
      </form>
      <ErrorAlert error={update.error} />
      <SaveFooter formId={formId} pending={update.isPending} onCancel={onClose} />
    </Modal>
  );
}
