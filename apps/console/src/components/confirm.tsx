import type { ReactNode } from 'react';
import { Button, Dialog, DialogTrigger, Heading, Modal, ModalOverlay } from 'react-aria-components';

/** A button that asks before it acts (revoke, sign out everywhere): the action runs on the dialog's confirm button. */
export function ConfirmButton({
  label,
  ariaLabel,
  title,
  children,
  confirmLabel,
  onConfirm,
  isDisabled,
}: {
  label: string;
  ariaLabel?: string;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  isDisabled?: boolean;
}) {
  return (
    <DialogTrigger>
      <Button className="button danger small" aria-label={ariaLabel} isDisabled={isDisabled}>
        {label}
      </Button>
      <ModalOverlay className="overlay" isDismissable>
        <Modal className="modal">
          <Dialog className="dialog" role="alertdialog">
            {({ close }) => (
              <>
                <Heading slot="title">{title}</Heading>
                {children}
                <div className="actions">
                  <Button
                    className="button danger"
                    onPress={() => {
                      onConfirm();
                      close();
                    }}
                  >
                    {confirmLabel}
                  </Button>
                  <Button className="button" autoFocus onPress={close}>
                    Cancel
                  </Button>
                </div>
              </>
            )}
          </Dialog>
        </Modal>
      </ModalOverlay>
    </DialogTrigger>
  );
}
