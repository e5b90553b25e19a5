import { Button, Dialog, Heading, Modal, ModalOverlay } from 'react-aria-components';
import { goToSignIn } from '../session.ts';
import { stepUp, useStepUpWanted } from '../step-up.ts';

/**
 * Shown when a write was refused with 403 `step_up_required`: the change needs a session that proved a second factor.
 * The button goes to the sign-in's step-up, which comes back to this page.
 */
export function StepUpDialog() {
  const open = useStepUpWanted();
  return (
    <ModalOverlay
      className="overlay"
      isOpen={open}
      isDismissable
      onOpenChange={(isOpen) => {
        if (!isOpen) stepUp.dismiss();
      }}
    >
      <Modal className="modal">
        <Dialog className="dialog" role="alertdialog">
          <Heading slot="title">Confirm it's you</Heading>
          <p>This change needs your passkey or authenticator app.</p>
          <div className="actions">
            <Button className="button primary" autoFocus onPress={() => goToSignIn({ aal2: true })}>
              Confirm with a passkey or app
            </Button>
            <Button className="button" onPress={() => stepUp.dismiss()}>
              Not now
            </Button>
          </div>
        </Dialog>
      </Modal>
    </ModalOverlay>
  );
}
