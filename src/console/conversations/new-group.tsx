import { useMutation } from "@tanstack/react-query";
import { useId, type FormEvent } from "react";
import { useLocation } from "wouter";
import { ErrorAlert } from "../components/error-alert";
import { DialogButton, Modal } from "../components/modal";
import { useRefreshMessages } from "../live";
import { useTRPC } from "../trpc";
import { groupPath } from "./thread-path";
import { typedPhone } from "./typed-phone";

/** The numbers typed, one per comma or line; the server judges each (E.164) and says which is wrong. */
const typedPhones = (value: string) => value.split(/[,\n]/).map(typedPhone).filter(Boolean);

function NewGroupDialog({ onClose }: { onClose: () => void }) {
  const trpc = useTRPC();
  const refresh = useRefreshMessages();
  const [, navigate] = useLocation();
  const helpId = useId();
  const create = useMutation(
    trpc.chats.create.mutationOptions({
      onSuccess: (answer) => {
        refresh();
        onClose();
        navigate(groupPath(answer.chat.id));
      },
    }),
  );
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const name = String(form.get("name")).trim();
    if (!create.isPending) create.mutate({ participants: typedPhones(String(form.get("participants"))), ...(name ? { name } : {}), message: String(form.get("message")) });
  };
  return (
    <Modal title="New group" onClose={onClose}>
      <form onSubmit={submit}>
        <label>
          Participants
          <textarea name="participants" rows={3} placeholder="+14155550123, +14155550124" aria-describedby={helpId} required />
          <small id={helpId}>Two or more numbers, separated by commas or lines.</small>
        </label>
        <label>
          Name
          <input name="name" autoComplete="off" placeholder="Optional" />
        </label>
        <label>
          Message
          <input name="message" autoComplete="off" required />
        </label>
        <ErrorAlert error={create.error} />
        <button type="submit" aria-busy={create.isPending}>
          Create group
        </button>
      </form>
    </Modal>
  );
}

/** Button "New group": a dialog to start a group chat by sending its first message, then its thread. */
export function NewGroup() {
  return <DialogButton label="New group" className="secondary" dialog={(close) => <NewGroupDialog onClose={close} />} />;
}
